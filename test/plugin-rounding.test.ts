import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// One completion token at 0.5 nanocredit, and a web plugin priced 0.5 nanocredit (prices may carry 15
// decimals): Cost = tokens × prices + plugin charges = 1 nanocredit exactly, rounded up once.
const answer = {
  id: 'u',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 0, completion_tokens: 1, total_tokens: 1 },
};

describe('the plugin charge is part of the one cost sum (CONTRACT §7), rounded up once', () => {
  const upstream = new ScriptedUpstream();
  const search = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [base, searchBase] = await Promise.all([upstream.start(), search.start()]);
    upstream.script({ kind: 'json', body: answer });
    search.script({ kind: 'json', body: { results: [{ title: 'T', url: 'https://t.test', text: 'x' }] } });
    gw = await startTestGateway({
      limits: { in_flight: { balance_threshold: 1 } },
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'v/model', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0', completion: '0.0000000005' } }] }],
      plugins: { web: { search_url: `${searchBase.replace(/\/v1$/, '')}/search`, price: '0.0000000005', max_results: 1 } },
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([upstream.stop(), search.stop()]);
  });

  it('0.5 nano of tokens + 0.5 nano of plugin is charged 1 nanocredit, not 2', async () => {
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'v/model', max_tokens: 1, messages: [{ role: 'user', content: 'q' }], plugins: [{ id: 'web' }] },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost: number } };
    const account = await gw.admin.getAccount(acct.id);
    expect({ cost: body.usage.cost, total_usage: account.total_usage }).toEqual({ cost: 1e-9, total_usage: 1e-9 });
  });
});
