import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { requestLogLine } from './helpers/log-lines.js';

// A request that ran past limits.request_deadline_ms before any provider answered: the gateway
// cancelled it, not the client, and the answer and the log line an operator reads say so (they said
// "the request was cancelled by the client": every cancellation was taken for the client's).
describe('a request past its deadline is not reported as cancelled by the client', () => {
  const up = new ScriptedUpstream();
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0));
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway(
      {
        providers: [{ id: 'up', type: 'openai', base_url: base, timeouts_ms: { first_byte: 600_000, idle: 600_000, total: 600_000 } }],
        models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
        limits: { request_deadline_ms: 1000 },
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  it('the answer and the log line say the deadline passed', async () => {
    const acct = await gw.account(10);
    up.script({ kind: 'hang' });
    const pending = gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { 'x-request-id': 'past-deadline' },
      body: { model: 'u/m', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    for (let i = 0; i < 200 && up.received.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(up.received.length).toBe(1);
    clock.advance(1500);
    const res = await pending;
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(body.error.message).not.toMatch(/cancelled by the client/);
    expect(body.error.message).toMatch(/deadline/);
    await requestLogLine(gw.log, 'past-deadline');
  });
});
