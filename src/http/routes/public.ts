import type { FastifyInstance } from 'fastify';
import { keyStatusView } from '../../admin/views.js';
import { GatewayError, notFound } from '../../errors.js';
import { accountOfKey } from '../../ledger/account-of-key.js';
import { creditsToJson } from '../../ledger/money.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import { generationView, modelView } from '../views.js';

/** How long a readiness check waits for the ledger. */
const READY_TIMEOUT_MS = 2000;

/** GET /key, /credits, /models, /generation, /health and /health/ready. */
export function registerPublicRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, config, catalog } = deps;
  const modelsCreated = Math.floor(clock.now() / 1000);

  app.get('/health', async () => ({ status: 'ok' }));

  // Readiness, for load balancers (CONTRACT §8): the ledger answers, within READY_TIMEOUT_MS.
  app.get('/health/ready', async () => {
    for (const probe of deps.readiness) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      });
      try {
        await Promise.race([probe.check(), timeout]);
      } catch (err) {
        deps.logger.warn({ err: (err as Error).message }, `readiness check: ${probe.what} does not answer`);
        throw new GatewayError('unavailable', `not ready: ${probe.what} does not answer`, {
          metadata: { reason: probe.reason },
          headers: { 'retry-after': '1' },
        });
      } finally {
        clearTimeout(timer);
      }
    }
    return { status: 'ok' };
  });

  app.get('/api/v1/key', async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const account = await accountOfKey(ledger, key);
    const [money, freeRequestsToday] = await Promise.all([deps.money.keyView(account.id, key.hash), deps.freeRequestsToday(account.id)]);
    return { data: keyStatusView(config, key, money.key, { ...account, balance: money.balance, totalUsage: money.totalUsage }, freeRequestsToday) };
  });

  app.get('/api/v1/credits', async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const account = await deps.money.account(await accountOfKey(ledger, key));
    return {
      data: {
        total_credits: creditsToJson(account.balance + account.totalUsage),
        total_usage: creditsToJson(account.totalUsage),
      },
    };
  });

  app.get('/api/v1/models', async () => {
    const data = catalog.list().map((m) => modelView(m, modelsCreated));
    return { data, links: { next: null }, total_count: data.length };
  });

  // The calling key's latest generations and its spend over time (the dashboard's key holder view):
  // an extension of CONTRACT §5, for any key of the account, each seeing its own only.
  app.get('/api/v1/generations', async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    return { data: (await deps.reports.keyGenerations(key, req.query)).map(generationView) };
  });

  app.get('/api/v1/key/activity', async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    return deps.reports.keyActivity(key, req.query);
  });

  app.get('/api/v1/generation', async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const id = (req.query as Record<string, unknown>).id;
    if (typeof id !== 'string' || !id) throw new GatewayError('invalid_request', 'id: the query parameter "id" is required');
    const generation = await ledger.getGeneration(id);
    if (!generation || generation.accountId !== key.accountId) throw notFound(`no generation with id "${id}"`);
    return { data: generationView(generation) };
  });
}
