import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

const DAY = 86_400_000;

describe('in-flight budget during the rollout (newer_accounts.only: true)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await upstream.start();
    upstream.script({
      kind: 'json',
      body: {
        id: 'u',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 10, total_tokens: 11 },
      },
    });
    gw = await startTestGateway(
      {
        limits: { in_flight: { fraction: 0.5, ceiling: 20, balance_threshold: 100, newer_accounts: { only: true, max_age_days: 30, min_spend: 5 } } },
        providers: [{ id: 'up', type: 'openai', base_url: base }],
        models: [
          { id: 't/cheap', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0', completion: '0.01' } }] },
          { id: 't/dear', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0', completion: '0.5' } }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  const ask = (key: string, model: string, maxTokens: number) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] } });
  const account = async (credits: number, createdAt?: string) => {
    const a = await gw.admin.createAccount({ name: 'r', ...(createdAt ? { created_at: createdAt } : {}) });
    await gw.admin.addCredits(a.id, { amount: credits });
    const { key } = await gw.admin.createKey(a.id, {});
    return { id: a.id, key };
  };

  it('applies to newer accounts only: an account older than max_age_days is not subject', async () => {
    const old = await account(10, new Date(clock.now() - 60 * DAY).toISOString());
    expect((await gw.admin.getAccount(old.id)).in_flight!.subject).toBe(false);
    expect((await ask(old.key, 't/cheap', 600)).status).toBe(200); // 6 > the 5 a budget would allow
    const young = await account(10);
    expect((await gw.admin.getAccount(young.id)).in_flight!.subject).toBe(true);
    const res = await ask(young.key, 't/cheap', 600);
    expect(res.status).toBe(402);
    expect(((await res.json()) as { error: { metadata: { reason: string } } }).error.metadata.reason).toBe('weight_exceeds_budget');
  });

  it('an account that has spent min_spend is established: no longer subject', async () => {
    const a = await account(50); // budget min(25, 20) = 20
    const before = await ask(a.key, 't/dear', 60); // estimate 30 > 20
    expect(before.status).toBe(402);
    expect((await ask(a.key, 't/dear', 20)).status).toBe(200); // estimate 10, costs 10 × 0.5 = 5
    expect((await gw.admin.getAccount(a.id)).in_flight!.subject).toBe(false);
    expect((await ask(a.key, 't/dear', 60)).status).toBe(200); // 30 ≤ the balance of 45
  });
});
