import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { creditsFromString } from '../src/ledger/money.js';
import { databaseTargets } from './helpers/database.js';
import { credits, nano, sleep, startGatewayCluster, tally, type GatewayCluster, type Outcome } from './helpers/gateway-cluster.js';
import { redisUrl } from './helpers/redis.js';

/**
 * Issue 8, "Multi-process tests": three gateway processes (`node dist/cli.js serve`) on one PostgreSQL
 * database and one Redis (a key prefix of this file's own) enforce one set of limits, exactly as one
 * process does (CONTRACT §8), and an admin change made through one of them reaches the others within 1 s.
 */

const postgres = databaseTargets.find((t) => t.name === 'postgres');
const runnable = postgres !== undefined && redisUrl !== undefined;
if (!runnable) process.stderr.write('note: the multi-process tests need DATABASE_URL (PostgreSQL) and REDIS_URL; skipped\n');

// Only completion tokens cost (prompt price 0): a request's estimate is exactly max_tokens × PRICE.
const PRICE = '0.01';
const FRACTION_PPM = 500_000n; // limits.in_flight.fraction 0.5
const CEILING = 50;
const THRESHOLD = 100;
const FREE_PER_MINUTE = 7;
const FREE_PER_DAY_LOW = 12;
/** CONTRACT §8: admin changes take effect on every process within 1 s. */
const PROPAGATION_MS = 1000;

/** The in-flight budget of a balance, as the config defines it: min(fraction × balance, ceiling). */
function budgetOf(balance: bigint): bigint {
  const share = (balance * FRACTION_PPM) / 1_000_000n;
  const ceiling = creditsFromString(String(CEILING));
  return share < ceiling ? share : ceiling;
}

const estimateOf = (maxTokens: number) => BigInt(maxTokens) * creditsFromString(PRICE);

/** Waits, when the wall clock is within 5 s of a minute boundary, for the next minute: a window cannot roll mid-test. */
async function awayFromMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 5000) await sleep(left + 100);
}

describe.skipIf(!runnable).sequential('issue 8: three gateway processes on one PostgreSQL and one Redis hold one set of limits', () => {
  let cluster: GatewayCluster;
  let drop: (() => Promise<void>) | undefined;

  let starting: Promise<GatewayCluster> | undefined;

  /**
   * The cluster the tests share, started by the first test (each awaits it): when it cannot start, every
   * test fails with the reason, rather than being reported as not run.
   */
  async function started(): Promise<void> {
    starting ??= (async () => {
      const db = await (postgres as NonNullable<typeof postgres>).create();
      drop = db.drop;
      return startGatewayCluster({
        label: 'multi-process',
        databaseUrl: db.url,
        redisUrl: redisUrl as string,
        cleanRedis: true,
        limits: {
          in_flight: { fraction: Number(FRACTION_PPM) / 1e6, ceiling: CEILING, balance_threshold: THRESHOLD, settlement_window_ms: 60_000 },
          free_models: { per_minute: FREE_PER_MINUTE, per_day_low: FREE_PER_DAY_LOW, per_day_high: 1000, tier_threshold: 10 },
        },
        models: [
          { id: 't/held', upstream: 'held', completion: PRICE },
          { id: 't/quick', upstream: 'quick', completion: PRICE },
          { id: 't/minute:free', upstream: 'quick', completion: '0' },
          // Its per-minute limit is far above the daily one, so only the daily one can refuse.
          { id: 't/daily:free', upstream: 'quick', completion: '0', per_minute: 1000 },
        ],
      });
    })();
    cluster = await starting;
    onTestFailed(() => console.log(cluster.tails()));
  }

  afterAll(async () => {
    await (await starting?.catch(() => undefined))?.stop();
    await drop?.();
  }, 60_000);

  /**
   * Sends `count` requests at once, round-robin over the three processes, to the `held` upstream; waits
   * (bounded) until every one of them is either answered or held there, and answers what it saw then.
   */
  async function burstHeld(key: string, count: number, maxTokens: number) {
    cluster.held.resetMaxHolding();
    const ended: Outcome[] = [];
    const all = Array.from({ length: count }, (_, i) =>
      cluster.chat(i % 3, key, { model: 't/held', maxTokens, tokens: 1 + (i % maxTokens), boundMs: 60_000 }).then((o) => (ended.push(o), o)),
    );
    const deadline = Date.now() + 30_000;
    while (ended.length + cluster.held.holding < count && Date.now() < deadline) await sleep(25);
    const heldAtOnce = cluster.held.maxHolding;
    const refusedWhileHeld = [...ended];
    cluster.held.release();
    const outcomes = await Promise.all(all);
    return { heldAtOnce, refusedWhileHeld, outcomes };
  }

  it(
    '90 concurrent paid requests of one small-balance account: holds never exceed the budget, admitted = what fits, balance exact',
    { timeout: 90_000 },
    async () => {
      await started();
      const CREDITS = 10;
      const MAX_TOKENS = 25;
      const acct = await cluster.createAccount({ name: 'budget', credits: CREDITS });
      const balance = creditsFromString(String(CREDITS));
      const budget = budgetOf(balance); // 5
      const estimate = estimateOf(MAX_TOKENS); // 0.25
      const fit = Number(budget / estimate); // 20

      const { heldAtOnce, refusedWhileHeld, outcomes } = await burstHeld(acct.key, 90, MAX_TOKENS);
      const admitted = outcomes.filter((o) => o.status === 200);
      const refused = outcomes.filter((o) => o.status !== 200);
      const heldSum = BigInt(heldAtOnce) * estimate;
      const audit = await cluster.audit(acct.id, acct.key, outcomes);
      const expected = balance - audit.sumReceived;
      const lost = audit.balance - expected;
      cluster.note(
        `holds/budget = ${credits(heldSum)}/${credits(budget)} = ${(Number(heldSum) / Number(budget)).toFixed(2)}, admitted = ${admitted.length} of ${fit} that fit, ` +
          `outcomes ${JSON.stringify(tally(outcomes))}, balance ${credits(audit.balance)} (expected ${credits(expected)}), money lost: ${credits(lost)}`,
      );

      expect.soft(heldSum <= budget, `largest sum of estimates held at once ${credits(heldSum)} exceeds the budget ${credits(budget)}`).toBe(true);
      expect.soft(admitted.length, 'admitted').toBe(fit);
      expect.soft(heldAtOnce, 'held at the upstream at once').toBe(fit);
      // Refused before reaching a provider, while the admitted ones were still running.
      expect.soft(refusedWhileHeld.length, 'refused while the admitted requests ran').toBe(90 - fit);
      for (const o of refused) {
        expect.soft({ status: o.status, reason: o.reason, limitSource: o.limitSource }, o.tag).toEqual({
          status: 402,
          reason: 'in_flight_budget_exhausted',
          limitSource: 'platform_in_flight_budget',
        });
        expect.soft(Number(o.retryAfter), `${o.tag} Retry-After`).toBeGreaterThanOrEqual(1);
      }
      expect.soft(audit.missing, 'answers received in full but not charged').toEqual([]);
      expect.soft(audit.wrongCost, 'charged at another cost than the answer stated').toEqual([]);
      expect.soft(audit.unreceived, 'charged but never received').toEqual([]);
      expect.soft(credits(audit.balance), 'balance = credits − Σ usage.cost').toBe(credits(expected));
      const adminBalance = audit.adminBalance === undefined ? 'no process alive to ask' : credits(audit.adminBalance);
      expect.soft(adminBalance, 'balance as the admin API reports it').toBe(credits(expected));
    },
  );

  it('free-model per-minute limit across the three processes: admitted = the limit, exactly', { timeout: 60_000 }, async () => {
    await started();
    await awayFromMinuteEdge();
    const acct = await cluster.createAccount({ name: 'free-minute', credits: 0 });
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => cluster.chat(i % 3, acct.key, { model: 't/minute:free', maxTokens: 5 })));
    const admitted = outcomes.filter((o) => o.status === 200).length;
    cluster.note(
      `free per-minute: admitted = ${admitted} of a limit of ${FREE_PER_MINUTE} (30 sent over 3 processes), outcomes ${JSON.stringify(tally(outcomes))}`,
    );
    expect.soft(admitted, 'admitted').toBe(FREE_PER_MINUTE);
    for (const o of outcomes.filter((x) => x.status !== 200)) {
      expect.soft({ status: o.status, limit: o.limit }, o.tag).toEqual({ status: 429, limit: 'free-models-per-minute' });
    }
  });

  it('free-model per-day limit across the three processes: admitted = the limit, exactly', { timeout: 60_000 }, async () => {
    await started();
    await awayFromMinuteEdge();
    const acct = await cluster.createAccount({ name: 'free-day', credits: 0 });
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => cluster.chat(i % 3, acct.key, { model: 't/daily:free', maxTokens: 5 })));
    const admitted = outcomes.filter((o) => o.status === 200).length;
    cluster.note(
      `free per-day: admitted = ${admitted} of a limit of ${FREE_PER_DAY_LOW} (30 sent over 3 processes), outcomes ${JSON.stringify(tally(outcomes))}`,
    );
    expect.soft(admitted, 'admitted').toBe(FREE_PER_DAY_LOW);
    for (const o of outcomes.filter((x) => x.status !== 200)) {
      expect.soft({ status: o.status, limit: o.limit }, o.tag).toEqual({ status: 429, limit: 'free-models-per-day' });
    }
    const status = await cluster.get(1, '/api/v1/key', acct.key);
    expect.soft(status.body?.data?.free_model_daily_requests, 'free_model_daily_requests on another process').toMatchObject({
      used: FREE_PER_DAY_LOW,
      limit: FREE_PER_DAY_LOW,
      remaining: 0,
    });
  });

  it('a key cap across the three processes: admitted = what the cap allows', { timeout: 90_000 }, async () => {
    await started();
    const LIMIT = 2;
    const MAX_TOKENS = 25;
    // A balance at the threshold: not subject to the in-flight budget, so only the key's cap binds.
    const acct = await cluster.createAccount({ name: 'key-cap', credits: 1000, key: { limit: LIMIT } });
    const estimate = estimateOf(MAX_TOKENS); // 0.25
    const allows = Number(creditsFromString(String(LIMIT)) / estimate); // 8

    const { heldAtOnce, outcomes } = await burstHeld(acct.key, 30, MAX_TOKENS);
    const admitted = outcomes.filter((o) => o.status === 200);
    const usage = admitted.reduce((s, o) => s + (o.cost ?? 0n), 0n);
    const key = await cluster.get(2, '/api/v1/key', acct.key);
    cluster.note(
      `key cap: admitted = ${admitted.length} of ${allows} that the cap of ${LIMIT} allows (estimate ${credits(estimate)}), held at once ${heldAtOnce}, ` +
        `outcomes ${JSON.stringify(tally(outcomes))}, key usage ${key.body?.data?.usage} (Σ cost ${credits(usage)})`,
    );
    expect.soft(admitted.length, 'admitted').toBe(allows);
    expect.soft(heldAtOnce, 'held at the upstream at once').toBe(allows);
    for (const o of outcomes.filter((x) => x.status !== 200)) {
      expect.soft({ status: o.status, limitSource: o.limitSource }, o.tag).toEqual({ status: 402, limitSource: 'platform_key_limit' });
    }
    expect.soft(credits(nano(key.body?.data?.usage)), 'key usage = Σ cost of its answers').toBe(credits(usage));
  });

  /** Polls `probe` on `proc` until `done`; answers when the first request that saw it was sent, after `from` (ms), or undefined. */
  async function firstSeen(proc: number, from: number, probe: () => Promise<boolean>): Promise<number | undefined> {
    // Polls until well past the bound, so a late change is measured rather than only refused.
    const giveUp = from + 5 * PROPAGATION_MS;
    while (Date.now() < giveUp) {
      const sentAt = Date.now();
      if (await probe()) return sentAt - from;
      await sleep(20);
    }
    return undefined;
  }

  it('a key disabled through process 0 is refused (401) by processes 1 and 2 within 1 s', { timeout: 60_000 }, async () => {
    await started();
    const acct = await cluster.createAccount({ name: 'disable', credits: 5 });
    // Processes 1 and 2 have used the key (and may have it cached).
    for (const p of [1, 2]) {
      expect((await cluster.get(p, '/api/v1/key', acct.key)).status).toBe(200);
      expect((await cluster.chat(p, acct.key, { model: 't/quick', maxTokens: 1 })).status).toBe(200);
    }
    const patched = await cluster.admin('PATCH', `/keys/${acct.hash}`, { disabled: true }, 0);
    expect(patched.status).toBe(200);
    const t0 = Date.now();
    const seen = await Promise.all(
      [1, 2].map((p) => firstSeen(p, t0, async () => (await cluster.chat(p, acct.key, { model: 't/quick', maxTokens: 1 })).status === 401)),
    );
    const keyRoute = await Promise.all([1, 2].map((p) => cluster.get(p, '/api/v1/key', acct.key)));
    cluster.note(`key disabled through 0: refused by process 1 after ${seen[0] ?? 'never (5 s)'} ms, by process 2 after ${seen[1] ?? 'never (5 s)'} ms`);
    for (const [i, ms] of seen.entries()) {
      expect.soft(ms !== undefined && ms <= PROPAGATION_MS, `process ${i + 1} refused the disabled key after ${ms ?? 'more than 5000'} ms`).toBe(true);
    }
    for (const r of keyRoute) expect.soft(r.status, 'GET /api/v1/key with the disabled key').toBe(401);
  });

  it('credits added through process 0 are seen by processes 1 and 2 (/api/v1/credits) within 1 s', { timeout: 60_000 }, async () => {
    await started();
    const acct = await cluster.createAccount({ name: 'top-up', credits: 5 });
    for (const p of [1, 2]) expect((await cluster.get(p, '/api/v1/credits', acct.key)).body?.data?.total_credits).toBe(5);
    const added = await cluster.admin('POST', `/accounts/${acct.id}/credits`, { amount: 7 }, 0);
    expect(added.status).toBe(200);
    const t0 = Date.now();
    const seen = await Promise.all(
      [1, 2].map((p) => firstSeen(p, t0, async () => (await cluster.get(p, '/api/v1/credits', acct.key)).body?.data?.total_credits === 12)),
    );
    cluster.note(`credits added through 0: seen by process 1 after ${seen[0] ?? 'never (5 s)'} ms, by process 2 after ${seen[1] ?? 'never (5 s)'} ms`);
    for (const [i, ms] of seen.entries()) {
      expect.soft(ms !== undefined && ms <= PROPAGATION_MS, `process ${i + 1} saw the credits after ${ms ?? 'more than 5000'} ms`).toBe(true);
    }
  });
});
