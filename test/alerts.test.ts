import { createHmac } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../src/alerts/webhook-signature.js';
import { ManualClock } from '../src/clock.js';
import type { ConfigInput } from '../src/config/schema.js';
import { databaseTargets } from './helpers/database.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { redisUrl } from './helpers/redis.js';
import { Receiver } from './helpers/webhook-receiver.js';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';

const SECRET = 'whsec-test-0123456789abcdef';

/** Polls until `probe` holds (real time; what it waits for is I/O on loopback). */
async function until(probe: () => boolean, what: string, debug?: () => string): Promise<void> {
  const start = Date.now();
  while (!probe()) {
    if (Date.now() - start > 5_000) throw new Error(`timed out waiting for ${what}${debug ? `: ${debug()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const upstream = new ScriptedUpstream();
const limited = new ScriptedUpstream();
let upstreamBase = '';
let limitedBase = '';

beforeAll(async () => {
  upstreamBase = await upstream.start();
  limitedBase = await limited.start();
  limited.script({ kind: 'json', status: 429, body: { error: { message: 'slow down', code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '30' } });
});
afterAll(async () => {
  await upstream.stop();
  await limited.stop();
});

/** A gateway whose acme/small costs 0.01 credit per completion token (prompt free), so each answer's cost is scripted. */
function gatewayConfig(webhookUrl: string, more: Partial<ConfigInput> = {}): Partial<ConfigInput> {
  return {
    providers: [
      { id: 'acme', type: 'openai', base_url: upstreamBase, api_key: 'platform-acme-key' },
      { id: 'slow', type: 'openai', base_url: limitedBase, api_key: 'platform-slow-key' },
    ],
    models: [
      { id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small-v1', pricing: { prompt: '0', completion: '0.01' } }] },
      { id: 'slow/limited', endpoints: [{ provider: 'slow', model: 'limited-v1', pricing: { prompt: '0', completion: '0.01' } }] },
    ],
    alerts: { webhooks: [{ id: 'ops', url: webhookUrl, secret: SECRET }], balance_below: 1, timeout_ms: 1000 },
    // No in-flight budget: small balances here pay for whole answers back to back.
    limits: { in_flight: { balance_threshold: 0 } },
    ...more,
  };
}

/** One chat request that the upstream answers with `completionTokens` (cost: 0.01 credit each). */
function chat(gw: TestGateway, key: string, completionTokens: number, model = 'acme/small'): Promise<Response> {
  upstream.script({ kind: 'json', body: upstreamAnswer(completionTokens) });
  return gw.fetch('/api/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 } });
}

/** An answer's JSON body, read loosely (the assertions check its shape). */
const body = async (res: Response | Promise<Response>): Promise<any> => (await res).json();

async function ok(res: Promise<Response>): Promise<void> {
  const r = await res;
  expect(r.status, await r.clone().text()).toBe(200);
}

describe('alert webhooks against a loopback receiver', () => {
  const receiver = new Receiver();
  let clock: ManualClock;
  let gw: TestGateway;

  beforeAll(async () => {
    const url = await receiver.start();
    clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0));
    gw = await startTestGateway(gatewayConfig(url), clock);
  });
  afterAll(async () => {
    await gw?.close();
    await receiver.stop();
  });
  afterEach(() => {
    receiver.received.length = 0;
  });

  it('a key crossing 80% then 100% of its limit sends each once; a raised limit re-arms', async () => {
    const { key, hash, id } = await gw.account(100, { limit: 1 });
    await ok(chat(gw, key, 85)); // 0.85 of 1
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(1);
    expect(receiver.of('key_limit_100')).toHaveLength(0);
    await ok(chat(gw, key, 1)); // 0.86: still past 80%, not sent again
    await ok(chat(gw, key, 1));
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(1);
    await ok(chat(gw, key, 20)); // 1.07: past 100%
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_100')).toHaveLength(1);
    expect((await chat(gw, key, 1)).status).toBe(402);
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(1);
    expect(receiver.of('key_limit_100')).toHaveLength(1);

    const first = receiver.of('key_limit_80')[0]!.json;
    expect(first.id).toMatch(/^evt_/);
    expect(first.data).toMatchObject({ key_hash: hash, account: id, limit: 1, usage: 0.85, limit_reset: null, period: 'all', resets_at: null });
    expect(receiver.of('key_limit_100')[0]!.json.data).toMatchObject({ limit: 1, usage: 1.07 });

    // The limit raised above the crossing: 1.07 of 2 is 53.5%; 1.67 of 2 crosses 80% of the new limit.
    await gw.fetch(`/api/v1/admin/keys/${hash}`, { method: 'PATCH', token: ADMIN_TOKEN, body: { limit: 2 } });
    await ok(chat(gw, key, 60));
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(2);
    expect(receiver.of('key_limit_80')[1]!.json.data).toMatchObject({ limit: 2, usage: 1.67 });
    expect(receiver.of('key_limit_100')).toHaveLength(1);
  });

  it('a new period re-arms a daily limit', async () => {
    const { key } = await gw.account(100, { limit: 1, limit_reset: 'daily' });
    await ok(chat(gw, key, 90));
    await ok(chat(gw, key, 1));
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(1);
    const day = receiver.of('key_limit_80')[0]!.json.data;
    expect(day).toMatchObject({ limit_reset: 'daily', period: 'd:2026-01-05', resets_at: '2026-01-06T00:00:00.000Z' });
    clock.advance(24 * 3600_000);
    await ok(chat(gw, key, 85));
    await gw.webhooks.idle();
    expect(receiver.of('key_limit_80')).toHaveLength(2);
    expect(receiver.of('key_limit_80')[1]!.json.data).toMatchObject({ period: 'd:2026-01-06', usage: 0.85 });
  });

  it('a balance falling below the threshold sends once; only a top-up clearly above it re-arms', async () => {
    const { key, id } = await gw.account(1.5);
    await ok(chat(gw, key, 60)); // 0.9 left
    await gw.webhooks.idle(); // (the balance an alert names is the one after the ledger write that crossed)
    await ok(chat(gw, key, 5)); // 0.85
    await gw.webhooks.idle();
    expect(receiver.of('balance_low')).toHaveLength(1);
    expect(receiver.of('balance_low')[0]!.json.data).toEqual({ account: id, balance: 0.9, threshold: 1 });
    await gw.admin.addCredits(id, { amount: 0.2 }); // 1.05: above, but not clearly (< 1.2)
    await ok(chat(gw, key, 10)); // 0.95
    await gw.webhooks.idle();
    expect(receiver.of('balance_low')).toHaveLength(1);
    await gw.admin.addCredits(id, { amount: 1 }); // 1.95: clearly above; re-armed
    await gw.webhooks.idle();
    await ok(chat(gw, key, 100)); // 0.95
    await gw.webhooks.idle();
    expect(receiver.of('balance_low')).toHaveLength(2);
    expect(receiver.of('balance_low')[1]!.json.data).toMatchObject({ balance: 0.95 });
  });

  it('a provider put on cooldown (429 with Retry-After) sends one event per cooldown', async () => {
    const { key } = await gw.account(100);
    expect((await chat(gw, key, 1, 'slow/limited')).status).toBe(429);
    expect((await chat(gw, key, 1, 'slow/limited')).status).toBe(429); // skipped while it cools down
    await gw.webhooks.idle();
    expect(receiver.of('provider_cooldown')).toHaveLength(1);
    expect(receiver.of('provider_cooldown')[0]!.json.data).toEqual({
      provider: 'slow',
      model: 'limited-v1',
      until: new Date(clock.now() + 30_000).toISOString(),
      code: 'rate_limit_exceeded',
    });
    clock.advance(31_000);
    expect((await chat(gw, key, 1, 'slow/limited')).status).toBe(429);
    await gw.webhooks.idle();
    expect(receiver.of('provider_cooldown')).toHaveLength(2);
  });

  it('each delivery is signed: the signature verifies with the secret and fails with another', async () => {
    const { key } = await gw.account(100, { limit: 1 });
    await ok(chat(gw, key, 80));
    await gw.webhooks.idle();
    const [d] = receiver.of('key_limit_80');
    expect(d).toBeDefined();
    expect(d!.headers['x-tollgate-event']).toBe('key_limit_80');
    expect(d!.headers['x-tollgate-event-id']).toBe(d!.json.id);
    const header = d!.headers['x-tollgate-signature'] as string;
    // As the README tells a receiver to check it, with nothing of Tollgate's code:
    const { t, v1 } = Object.fromEntries(header.split(',').map((p) => p.split('='))) as { t: string; v1: string };
    expect(Number(t)).toBe(Math.floor(clock.now() / 1000));
    expect(createHmac('sha256', SECRET).update(`${t}.${d!.raw}`).digest('hex')).toBe(v1);
    expect(createHmac('sha256', 'another-secret-0123456789').update(`${t}.${d!.raw}`).digest('hex')).not.toBe(v1);
    expect(verifySignature(SECRET, header, d!.raw, Number(t))).toBe(true);
    expect(verifySignature('another-secret-0123456789', header, d!.raw, Number(t))).toBe(false);
    expect(verifySignature(SECRET, header, d!.raw.replace('key_limit_80', 'key_limit_81'), Number(t))).toBe(false);
    expect(verifySignature(SECRET, header, d!.raw, Number(t) + 3600)).toBe(false); // stale
  });

  it('lists the webhook without its secret or userinfo, and its test action reports what the receiver said', async () => {
    const list = await body(gw.fetch('/api/v1/admin/webhooks', { token: ADMIN_TOKEN }));
    expect(list.data).toEqual([
      expect.objectContaining({ id: 'ops', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/hook$/), pending: 0, last_failure: null }),
    ]);
    expect(list.data[0].events).toEqual(['key_limit_80', 'key_limit_100', 'balance_low', 'provider_cooldown']);
    expect(JSON.stringify(list)).not.toContain(SECRET);

    const res = await gw.fetch('/api/v1/admin/webhooks/ops/test', { method: 'POST', token: ADMIN_TOKEN });
    expect(res.status).toBe(200);
    expect((await body(res)).data).toMatchObject({ id: 'ops', delivered: true, status: 200, error: null });
    expect(receiver.of('test')).toHaveLength(1);

    receiver.status = 500;
    try {
      const failed = await body(gw.fetch('/api/v1/admin/webhooks/ops/test', { method: 'POST', token: ADMIN_TOKEN }));
      expect(failed.data).toMatchObject({ delivered: false, status: 500, error: 'HTTP 500' });
    } finally {
      receiver.status = 200;
    }
    const after = await body(gw.fetch('/api/v1/admin/webhooks', { token: ADMIN_TOKEN }));
    expect(after.data[0]).toMatchObject({ last_failure: 'HTTP 500', last_failure_at: expect.any(String), last_success_at: expect.any(String) });

    expect((await gw.fetch('/api/v1/admin/webhooks/nope/test', { method: 'POST', token: ADMIN_TOKEN })).status).toBe(404);
    expect((await gw.fetch('/api/v1/admin/webhooks', {})).status).toBe(401);
    expect(gw.log.text).not.toContain(SECRET);
  });
});

describe('a receiver that is dead or never answers', () => {
  const hanging = new Receiver();
  const failing = new Receiver();
  let deadUrl = '';
  let clock: ManualClock;
  let gw: TestGateway;
  let backoffClock: ManualClock;
  let backoff: TestGateway;

  beforeAll(async () => {
    hanging.hang = true;
    failing.status = 503;
    // A port that refuses connections: listened on once, then closed.
    const probe = new Receiver();
    deadUrl = await probe.start();
    await probe.stop();
    clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0));
    gw = await startTestGateway(
      {
        ...gatewayConfig(''),
        alerts: {
          webhooks: [
            { id: 'hangs', url: (await hanging.start()).replace('http://', 'http://user:pw@') + '?token=abc', secret: SECRET, events: ['key_limit_80'] },
            { id: 'dead', url: deadUrl, secret: SECRET, events: ['provider_cooldown'] },
          ],
          timeout_ms: 1000,
        },
      },
      clock,
    );
    // Its own gateway, whose attempts time out long after any backoff: the clock moves in jumps here.
    backoffClock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0));
    backoff = await startTestGateway(
      {
        ...gatewayConfig(''),
        alerts: { webhooks: [{ id: 'fails', url: await failing.start(), secret: SECRET, events: ['balance_low'] }], timeout_ms: 60_000 },
      },
      backoffClock,
    );
  });
  afterAll(async () => {
    await gw?.close();
    await backoff?.close();
    await hanging.stop();
    await failing.stop();
  });

  it('requests complete while a delivery hangs; the hung attempt times out on the clock and is retried', async () => {
    const { key } = await gw.account(100, { limit: 10 });
    await ok(chat(gw, key, 850));
    await until(() => hanging.received.length === 1, 'the delivery to reach the hanging receiver');
    // The delivery hangs; requests go on exactly as the upstream answers them.
    const results = await Promise.all(Array.from({ length: 10 }, () => chat(gw, key, 1)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const [listed] = (await body(gw.fetch('/api/v1/admin/webhooks', { token: ADMIN_TOKEN }))).data;
    expect(listed).toMatchObject({ id: 'hangs', pending: 1, delivered: 0, last_failure: null });
    expect(listed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hook$/); // no userinfo, no query
    expect(hanging.received).toHaveLength(1);

    clock.advance(1000); // the attempt's timeout
    await until(() => gw.webhooks.list()[0]!.last_failure !== null, 'the timeout to be recorded');
    expect(gw.webhooks.list()[0]).toMatchObject({ pending: 1, last_failure: 'no answer within 1000 ms' });
    // The first backoff is 2 to 4 s (jitter). The clock moves in steps well under the attempt's
    // timeout, so that the retry reaches the receiver before its own timeout could fire.
    clock.advance(1999);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(hanging.received).toHaveLength(1);
    for (let moved = 0; hanging.received.length < 2 && moved <= 2000; moved += 50) {
      clock.advance(50);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await until(() => hanging.received.length === 2, 'the retry');
    expect(hanging.received[1]!.json.id).toBe(hanging.received[0]!.json.id);
  });

  it('a failing receiver is retried with exponential backoff, five attempts in all, then given up', async () => {
    const { key } = await backoff.account(1.1);
    await ok(chat(backoff, key, 20)); // 0.9 left: balance_low
    // An attempt's failure is recorded (and its retry scheduled) at the clock's time then.
    const failedNow = () => backoff.webhooks.list()[0]!.last_failure_at === new Date(backoffClock.now()).toISOString();
    await until(failedNow, 'the first attempt to fail');
    const waits = [4000, 8000, 16000, 32000];
    for (const [i, wait] of waits.entries()) {
      // Each wait is between half and all of base × 2^n (jitter): not before half of it.
      backoffClock.advance(wait / 2 - 1);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(failing.received).toHaveLength(i + 1);
      backoffClock.advance(wait / 2 + 1);
      await until(
        () => failing.received.length === i + 2 && failedNow(),
        `attempt ${i + 2} to fail`,
        () => JSON.stringify({ n: failing.received.length, now: new Date(backoffClock.now()).toISOString(), s: backoff.webhooks.list()[0] }),
      );
    }
    await until(() => backoff.webhooks.list()[0]!.pending === 0, 'the delivery to be given up');
    backoffClock.advance(600_000);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(failing.received).toHaveLength(5);
    expect(new Set(failing.received.map((d) => d.json.id)).size).toBe(1);
    expect(backoff.webhooks.list()[0]).toMatchObject({ id: 'fails', pending: 0, failed: 1, delivered: 0, last_failure: 'HTTP 503' });
  });

  it('the test action against a dead receiver reports the failure and is not retried', async () => {
    const res = await gw.fetch('/api/v1/admin/webhooks/dead/test', { method: 'POST', token: ADMIN_TOKEN });
    expect(res.status).toBe(200);
    const { data } = await body(res);
    expect(data).toMatchObject({ id: 'dead', delivered: false, status: null });
    expect(data.error).toMatch(/ECONNREFUSED/);
    expect(gw.webhooks.list()[1]).toMatchObject({ pending: 0, last_failure: data.error });
  });
});

const postgres = databaseTargets.find((t) => t.name === 'postgres');

// Two gateways in one test process on one PostgreSQL database (and one Redis when REDIS_URL is set).
describe.skipIf(!postgres)('two gateways on one PostgreSQL database send one event per crossing between them', () => {
  const receiver = new Receiver();
  let a: TestGateway;
  let b: TestGateway;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await postgres!.create();
    drop = db.drop;
    const url = await receiver.start();
    const shared = {
      database_url: db.url,
      ...(redisUrl ? { redis_url: redisUrl, redis_key_prefix: `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:` } : {}),
    };
    a = await startTestGateway(gatewayConfig(url, shared));
    b = await startTestGateway(gatewayConfig(url, shared));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await receiver.stop();
    await drop?.();
  });

  it('a key limit and a low balance crossed through both gateways alert once each', async () => {
    const { key } = await a.account(1.5, { limit: 1.2 });
    const both = async () => Promise.all([a.webhooks.idle(), b.webhooks.idle()]);
    await ok(chat(a, key, 50)); // usage 0.5, balance 1.0
    await ok(chat(b, key, 50)); // usage 1.0 (83%), balance 0.5: both cross here, in b
    await both();
    await ok(chat(a, key, 5)); // a sees the same crossings: already claimed
    await ok(chat(b, key, 5));
    await ok(chat(a, key, 15)); // 1.25: past 100%
    await both();
    expect(await chat(b, key, 1).then((r) => r.status)).toBe(402);
    await both();
    expect(receiver.of('key_limit_80')).toHaveLength(1);
    expect(receiver.of('key_limit_100')).toHaveLength(1);
    expect(receiver.of('balance_low')).toHaveLength(1);
  });
});
