import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §7: "A reported count that cannot be true (more tokens than the model's context_length) is
 * not believed: the gateway counts what it delivered instead, and the generation says so
 * (usage_source: "counted")."
 *
 * A model's context holds the prompt and the completion together: an upstream that reports
 * prompt 60 + completion 60 = total_tokens 120 on a model whose context_length is 100 reports a
 * count that cannot be true, though each part alone fits.
 */
describe('CONTRACT §7: a total token count above the context_length is not believed', () => {
  const up = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await up.start();
    up.script({
      kind: 'json',
      body: {
        id: 'up',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 60, completion_tokens: 60, total_tokens: 120 },
      },
    });
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/small', context_length: 100, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.001', completion: '0.001' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  it('prompt 60 + completion 60 = 120 tokens on a 100-token model: counted, not charged as reported', async () => {
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'u/small', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: string; usage: { cost: number } };
    const g = await gw.fetch(`/api/v1/generation?id=${body.id}`, { token: acct.key });
    const gen = ((await g.json()) as { data: Record<string, unknown> }).data;
    // What the upstream reported would cost 120 × 0.001 = 0.12 credits.
    expect(gen.usage_source).toBe('counted');
    expect(body.usage.cost).toBeLessThan(0.12);
  });
});
