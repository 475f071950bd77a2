import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { privateRedisMissing, startPrivateRedis, type PrivateRedis } from './helpers/private-redis.js';

// `tollgate credits add` / POST /api/v1/admin/accounts/:id/credits writes the credit entry, then builds
// its answer from the limits store (where the account stands against its in-flight budget: Redis).
// When Redis stops answering in between, the answer still says the purchase is done (its `in_flight`
// null): it said 503 "limits_unavailable … retry", and doing what it said credited the account twice.
describe.skipIf(privateRedisMissing())('credits added while Redis stops answering', () => {
  let redis: PrivateRedis | undefined;
  let gw: TestGateway | undefined;
  afterAll(async () => {
    redis?.resume();
    await gw?.close().catch(() => undefined);
    await redis?.stop();
  });

  it('a purchase the ledger recorded is not answered as a failure to retry', { timeout: 30_000 }, async () => {
    redis = await startPrivateRedis();
    const clock = new ManualClock(Date.now());
    gw = await startTestGateway({ redis_url: redis.url, redis_key_prefix: `credits-redis-gone-${process.pid}:` }, clock);
    const acct = await gw.admin.createAccount({ name: 'buyer' });

    // Redis stops answering right after the credit entry is committed (the window is real; the hook
    // only lands the test in it every time).
    const ledger = gw.ledger as unknown as { addCredits: (...a: unknown[]) => Promise<unknown> };
    const original = ledger.addCredits.bind(ledger);
    const r = redis;
    ledger.addCredits = async (...a: unknown[]) => {
      const out = await original(...a);
      r.pause();
      return out;
    };

    const res = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, { token: ADMIN_TOKEN, body: { amount: 5 } });
    const body = await res.text();
    if (res.status === 200) expect(JSON.parse(body)).toMatchObject({ data: { id: acct.id, total_purchased: 5, in_flight: null } });
    ledger.addCredits = original;
    redis.resume();

    const recorded = await gw.ledger.getAccount(acct.id);
    // Either the purchase is answered as done, or it was not recorded: never "failed, retry" for one that was.
    expect({ status: res.status, body: res.status === 200 ? 'ok' : body, purchased: recorded?.totalPurchased }).toEqual({
      status: 200,
      body: 'ok',
      purchased: 5_000_000_000n,
    });
  });
});
