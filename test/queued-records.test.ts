import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import type { AdmitRequest, HoldStore } from '../src/limits/hold-store.js';
import { RedisHoldStore } from '../src/limits/redis-hold-store.js';
import { redisTarget, redisUrl } from './helpers/redis.js';

/**
 * Two gateway processes on one Redis (CONTRACT §8). A commit's record that skips a sequence number
 * waits in `q|SEQ` (hold-scripts.ts, record_in_order). A snapshot another process read from the ledger
 * at the same number (AccountMoney.load: a key's new daily period, a key newly limited) may be waiting
 * there first: the commit's own record, which names the charges it recorded, joins it rather than
 * being dropped, or its charge would stay pending beside a snapshot that already counts it (counted
 * twice until its lease lapses, hold_lease_ms, 30 s: wrong 402s meanwhile).
 */
const C = 1_000_000_000n;
const A = 'acct_r27';
const KEY = 'k1';
const DAY = 'd:2026-01-05';
const periods = { daily: DAY, weekly: 'w:2026-01-05', monthly: 'm:2026-01' };
const keyRows = (usage: bigint, seq: bigint) => [
  { hash: KEY, periods: ['all', DAY, periods.weekly, periods.monthly].map((period) => ({ seq, period, usage, byokUsage: 0n })) },
];
const req = (id: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({ accountId: A, id, leaseMs: 30_000, refuseNegative: true, ...over });

describe.runIf(redisUrl)('a commit record behind a gap, with a ledger snapshot of the same seq queued first', () => {
  it('the commit record is not thrown away: its charge is not counted twice once the gap closes', async () => {
    const t = await redisTarget();
    const clock = new ManualClock(1_000_000);
    const p1 = new RedisHoldStore(t.client, { prefix: t.prefix, clock, syncEveryMs: 0 });
    const p2 = new RedisHoldStore(t.client, { prefix: t.prefix, clock, syncEveryMs: 0 });
    const view = async (store: HoldStore) => (await store.view(A))?.balance;
    try {
      // The ledger at seq 1: balance 10. Both processes know it.
      await p1.record({ accountId: A, account: { seq: 1n, balance: 10n * C, totalUsage: 0n } });
      // p2 serves request X (cost 1): admitted, settled, its charge pending.
      expect(await p2.admit(req('X', { balance: C }))).toMatchObject({ ok: true });
      await p2.settle({ accountId: A, id: 'X', cost: C, byokUsage: 0n, keyHash: KEY, periods, windowMs: 60_000, leaseMs: 30_000 });
      expect(await view(p2)).toBe(9n * C);
      // In the ledger: seq 2 is a credit of 5 made by a third process whose record has not landed
      // (or never will); seq 3 is p2's commit of X. Balance after seq 3: 10 + 5 − 1 = 14.
      // p1 needs the key's snapshot (a key period it has none of) and reads the ledger at seq 3.
      await p1.record({ accountId: A, account: { seq: 3n, balance: 14n * C, totalUsage: C }, keys: keyRows(C, 3n) });
      // p2's own record of its commit lands: seq 3, X recorded.
      await p2.record({ accountId: A, account: { seq: 3n, balance: 14n * C, totalUsage: C }, keys: keyRows(C, 3n), committed: ['X'] });
      // The missing record never comes: after half a second the waiting one is applied.
      clock.advance(600);
      // The ledger says 14, and nothing is pending any more (X is in the ledger, recorded at seq 3).
      const after = await view(p1);
      expect(after, 'balance every process admits against, 600 ms later (ledger: 14)').toBe(14n * C);
      // Had p2's record landed before p1's snapshot, the view would read 14: the order of two
      // processes' writes must not matter.
    } finally {
      await Promise.all([p1.close(), p2.close()]);
      await t.close();
    }
  });
});
