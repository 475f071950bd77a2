import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { parsePrometheus, sample, type Samples } from './helpers/prometheus.js';

// Issue 10: /metrics (CONTRACT §10) counted after requests that were served, refused with 402 and
// 429, and fell back; X-Request-Id on every answer; log lines that say why a request was refused.

const METRICS_TOKEN = 'scraper-token-0123456789';
const paid = { prompt: '0.000001', completion: '0.000002' };

describe('issue 10: metrics and logs that explain', () => {
  const a = new ScriptedUpstream();
  const b = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [urlA, urlB] = await Promise.all([a.start(), b.start()]);
    gw = await startTestGateway({
      providers: [
        { id: 'a', type: 'openai', base_url: urlA },
        { id: 'b', type: 'openai', base_url: urlB },
        { id: 'demo', type: 'demo', token_latency_ms: 0 },
      ],
      models: [
        {
          id: 't/m',
          context_length: 100_000,
          endpoints: [
            { provider: 'a', model: 'm', pricing: paid },
            { provider: 'b', model: 'm', pricing: paid },
          ],
        },
        { id: 'demo/echo:free', per_minute: 1, endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }] },
      ],
      metrics: { token: METRICS_TOKEN },
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop()]);
  });

  const scrape = async (token = ADMIN_TOKEN): Promise<Samples> => {
    const res = await gw.fetch('/metrics', { token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    return parsePrometheus(await res.text());
  };
  const chat = (key: string, model = 't/m', headers: Record<string, string> = {}) =>
    gw.fetch('/api/v1/chat/completions', { token: key, headers, body: { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });

  it('GET /metrics takes the admin token or metrics.token, nothing else', async () => {
    const acct = await gw.account(1);
    expect((await gw.fetch('/metrics')).status).toBe(401);
    expect((await gw.fetch('/metrics', { token: acct.key })).status).toBe(401);
    expect((await gw.fetch('/metrics', { token: 'wrong-token-0123456789' })).status).toBe(401);
    await scrape(ADMIN_TOKEN);
    const samples = await scrape(METRICS_TOKEN);
    // Node's default process metrics come too.
    expect(sample(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('counts what was served, refused (402, 429) and fell back, and what was charged', async () => {
    const before = await scrape();
    // Served by a after nothing failed.
    a.script({ kind: 'json', body: upstreamAnswer(7) });
    const served = await gw.account(1);
    expect((await chat(served.key)).status).toBe(200);
    // a fails with a 500, b serves it: one fallback from a.
    a.script({ kind: 'text', status: 500, body: 'boom' });
    b.script({ kind: 'json', body: upstreamAnswer(3) });
    expect((await chat(served.key)).status).toBe(200);
    // A key limit too small for the estimate: 402 platform_key_limit.
    const capped = await gw.account(1, { limit: 0.000001 });
    expect((await chat(capped.key)).status).toBe(402);
    // A free model with a per-minute limit of 1: the second is a platform 429.
    const free = await gw.account(1);
    expect((await chat(free.key, 'demo/echo:free')).status).toBe(200);
    expect((await chat(free.key, 'demo/echo:free')).status).toBe(429);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('tollgate_requests_total', { model: 't/m', provider: 'a', status: '200' })).toBe(1);
    expect(delta('tollgate_requests_total', { model: 't/m', provider: 'b', status: '200' })).toBe(1);
    expect(delta('tollgate_requests_total', { model: 'demo/echo:free', provider: 'demo', status: '200' })).toBe(1);
    expect(delta('tollgate_requests_total', { model: '', provider: '', status: '402' })).toBe(1);
    expect(delta('tollgate_requests_total', { model: '', provider: '', status: '429' })).toBe(1);
    expect(delta('tollgate_refusals_total', { status: '402', limit_source: 'platform_key_limit' })).toBe(1);
    expect(delta('tollgate_refusals_total', { status: '429', limit: 'free-models-per-minute' })).toBe(1);
    expect(delta('tollgate_fallbacks_total', { from_provider: 'a', reason: 'http' })).toBe(1);
    expect(delta('tollgate_fallbacks_total')).toBe(1);
    // Charged: what the ledger says the account spent, and the tokens billed (5 prompt each, 7 and 3 completion).
    const account = await gw.admin.getAccount(served.id);
    expect(delta('tollgate_credits_charged_total', { model: 't/m' })).toBeCloseTo(account.total_usage, 12);
    expect(delta('tollgate_tokens_total', { model: 't/m', kind: 'prompt' })).toBe(10);
    expect(delta('tollgate_tokens_total', { model: 't/m', kind: 'completion' })).toBe(10);
    expect(delta('tollgate_upstream_duration_seconds_count', { provider: 'a' })).toBe(1);
    expect(delta('tollgate_upstream_duration_seconds_count', { provider: 'b' })).toBe(1);
    expect(delta('tollgate_charge_lag_seconds_count')).toBe(3);
    // Nothing runs now: nothing is held.
    expect(sample(after, 'tollgate_inflight_held_credits')).toBe(0);
  });

  it('times the first token of a stream', async () => {
    const before = await scrape();
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'demo/echo:free', stream: true, messages: [{ role: 'user', content: 'hello there' }] },
    });
    // The free model's per-minute limit was used by the test before: another account is not limited by it.
    expect(res.status).toBe(200);
    await res.text();
    const after = await scrape();
    expect(
      sample(after, 'tollgate_time_to_first_token_seconds_count', { provider: 'demo' }) -
        sample(before, 'tollgate_time_to_first_token_seconds_count', { provider: 'demo' }),
    ).toBe(1);
  });

  it('every answer carries X-Request-Id: the client’s own when well-formed, else a new one', async () => {
    const acct = await gw.account(1);
    a.script({ kind: 'json', body: upstreamAnswer(1) });
    const kept = await chat(acct.key, 't/m', { 'x-request-id': 'client-trace-42' });
    expect(kept.headers.get('x-request-id')).toBe('client-trace-42');
    const replaced = await chat(acct.key, 't/m', { 'x-request-id': 'no spaces or <html> allowed' });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req-[0-9a-f-]{36}$/);
    for (const res of [await gw.fetch('/health'), await gw.fetch('/api/v1/key'), await gw.fetch('/nowhere'), await gw.fetch('/api/v1/models')]) {
      expect(res.headers.get('x-request-id')).toMatch(/^req-/);
    }
    const stream = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { 'x-request-id': 'stream-7' },
      body: { model: 'demo/echo:free', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    await stream.text();
    expect(stream.headers.get('x-request-id')).toBe('stream-7');
    // An answer Fastify's body parser refused, and one a route's validation refused, carry it too.
    for (const body of ['{"model":', JSON.stringify({ model: 't/m', messages: 'not a list' })]) {
      const refused = await gw.fetch('/api/v1/chat/completions', { token: acct.key, headers: { 'x-request-id': 'bad-body' }, rawBody: body });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('x-request-id')).toBe('bad-body');
    }
  });

  const lineOf = (reqId: string): Record<string, unknown> => {
    const line = gw.log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.reqId === reqId && l.msg === 'request');
    if (!line) throw new Error(`no log line for ${reqId}`);
    return line;
  };

  it('the log line of a 402 names its request id, key label, account, model, status and limit_source', async () => {
    const capped = await gw.account(1, { limit: 0.000001, name: 'capped-key' });
    const res = await chat(capped.key, 't/m', { 'x-request-id': 'refused-402' });
    expect(res.status).toBe(402);
    expect(res.headers.get('x-request-id')).toBe('refused-402');
    const [key] = await gw.admin.listKeys(capped.id);
    const line = lineOf('refused-402');
    expect(line).toMatchObject({
      status: 402,
      account: capped.id,
      key_label: key?.label,
      model: 't/m',
      error: 'key_limit_reached',
      limit_source: 'platform_key_limit',
    });
    expect(gw.log.text).not.toContain(capped.key);
  });

  it('the log line of a 429 names the limit; a 502 names every provider tried and how it failed; a fallback is logged', async () => {
    const free = await gw.account(1);
    await chat(free.key, 'demo/echo:free');
    const refused = await chat(free.key, 'demo/echo:free', { 'x-request-id': 'refused-429' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-request-id')).toBe('refused-429');
    expect(lineOf('refused-429')).toMatchObject({ status: 429, limit: 'free-models-per-minute', error: 'rate_limited' });

    const acct = await gw.account(1);
    a.script({ kind: 'text', status: 503, body: 'down' });
    b.script({ kind: 'destroy' });
    const failedAnswer = await chat(acct.key, 't/m', { 'x-request-id': 'failed-502' });
    expect(failedAnswer.status).toBe(502);
    expect(failedAnswer.headers.get('x-request-id')).toBe('failed-502');
    const failed = lineOf('failed-502');
    expect(failed).toMatchObject({ status: 502, error: 'upstream_failed', model: 't/m' });
    expect(failed.providers).toEqual([
      expect.objectContaining({ provider: 'a', model: 't/m', outcome: 'http', status: 503 }),
      expect.objectContaining({ provider: 'b', model: 't/m', outcome: 'network' }),
    ]);

    a.script({ kind: 'text', status: 500, body: 'boom' });
    b.script({ kind: 'json', body: upstreamAnswer(2) });
    expect((await chat(acct.key, 't/m', { 'x-request-id': 'fell-back' })).status).toBe(200);
    const fell = lineOf('fell-back');
    expect(fell).toMatchObject({ status: 200, provider: 'b', model: 't/m' });
    expect(fell.fallbacks).toEqual([expect.objectContaining({ provider: 'a', outcome: 'http', status: 500 })]);
  });
});
