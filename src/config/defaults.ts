import type { ConfigInput } from './schema.js';

/**
 * The embedded defaults `npm start` runs on when no config file is given: a SQLite ledger under
 * ./data, limiters in process, and the built-in demo provider with one paid and one free model.
 */
export const embeddedConfig: ConfigInput = {
  admin_token: '${TOLLGATE_ADMIN_TOKEN}',
  secrets_key: '${TOLLGATE_SECRETS_KEY}',
  providers: [{ id: 'demo', type: 'demo' }],
  models: [
    {
      id: 'demo/echo',
      name: 'Demo: Echo',
      description: 'Built-in deterministic model; needs no network.',
      context_length: 8192,
      endpoints: [
        {
          provider: 'demo',
          model: 'echo',
          pricing: { prompt: '0.000001', completion: '0.000002', request: '0', image: '0' },
        },
      ],
    },
    {
      id: 'demo/echo:free',
      name: 'Demo: Echo (free)',
      description: 'Free variant of the built-in demo model; free-model limits apply.',
      context_length: 8192,
      endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }],
    },
  ],
};
