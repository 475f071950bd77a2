import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { parsePrometheus, sample, type Samples } from './helpers/prometheus.js';

const paid = { prompt: '0.000001', completion: '0.000002' };

async function scrape(gw: TestGateway): Promise<Samples> {
  const res = await gw.fetch('/metrics', { token: ADMIN_TOKEN });
  expect(res.status).toBe(200);
  return parsePrometheus(await res.text());
}

describe('CONTRACT §10: tollgate_requests_total counts every chat answer, a DDoS-guard 429 too', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0, 100));
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ limits: { ddos: { per_ip_per_second: 2 } } }, clock);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('a chat request refused 429 by the DDoS guard is counted with status 429 (as it is in refusals)', async () => {
    const acct = await gw.account(10);
    const ask = () =>
      gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'demo/echo', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] } });
    expect((await ask()).status).toBe(200);
    clock.advance(5000); // a new second: the scrape is its first request (/metrics meets the guard too), the chat request its second
    const before = await scrape(gw);
    expect((await ask()).status).toBe(200);
    const refused = await ask();
    expect(refused.status).toBe(429);
    await refused.text();
    clock.advance(5000);
    await new Promise((r) => setTimeout(r, 50));
    const after = await scrape(gw);
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('tollgate_refusals_total', { status: '429', limit: 'ddos' })).toBe(1);
    // The same refused chat request, in the per-status request count.
    expect(delta('tollgate_requests_total', { status: '429' })).toBe(1);
  });
});

describe('CONTRACT §10: tollgate_fallbacks_total counts every attempt that failed before the request moved on', () => {
  const a = new ScriptedUpstream();
  const b = new ScriptedUpstream();
  const c = new ScriptedUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const [ua, ub, uc] = await Promise.all([a.start(), b.start(), c.start()]);
    gw = await startTestGateway({
      providers: [
        { id: 'a', type: 'openai', base_url: ua },
        { id: 'b', type: 'openai', base_url: ub },
        { id: 'c', type: 'openai', base_url: uc },
      ],
      models: [
        {
          id: 't/m',
          context_length: 100_000,
          endpoints: [
            { provider: 'a', model: 'm', pricing: paid },
            { provider: 'b', model: 'm', pricing: paid },
            { provider: 'c', model: 'm', pricing: paid },
          ],
        },
      ],
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  });

  it('a fails (500), b is cooling down and skipped, c serves: the fallback from a is counted', async () => {
    const acct = await gw.account(10);
    const chat = () =>
      gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 't/m', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });
    // First request: a 500, b 429 with a retry hint (b cools down), c serves.
    a.script({ kind: 'text', status: 500, body: 'boom' });
    b.script({ kind: 'json', status: 429, body: { error: { message: 'slow down', code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '30' } });
    c.script({ kind: 'json', body: upstreamAnswer(2) });
    expect((await chat()).status).toBe(200);
    const before = await scrape(gw);
    // Second request: a 500 again, b skipped (cooling down), c serves.
    expect((await chat()).status).toBe(200);
    expect(b.received.length).toBe(1);
    const after = await scrape(gw);
    const delta = (labels: Record<string, string>) => sample(after, 'tollgate_fallbacks_total', labels) - sample(before, 'tollgate_fallbacks_total', labels);
    expect(delta({ from_provider: 'a', reason: 'http' })).toBe(1);
  });
});
