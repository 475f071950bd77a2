import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { GatewayError } from '../src/errors.js';
import { ExpiryHeap } from '../src/limits/expiry-heap.js';
import type { AdmitRequest, HoldStore, HoldView, LedgerUpdate } from '../src/limits/hold-store.js';
import { MemoryHoldStore } from '../src/limits/memory-hold-store.js';
import { RedisHoldStore } from '../src/limits/redis-hold-store.js';
import { redisTarget, redisUrl } from './helpers/redis.js';

interface Made {
  store: HoldStore;
  clock: ManualClock;
  /** Redis only: forgets everything, as a Redis restarted empty would. */
  wipe?: () => Promise<void>;
  /** Redis only: the client, and the name of one of the account's keys (`t` totals, `p` pending charges). */
  redis?: { client: Redis; key: (name: string) => string };
  sync?: () => Promise<void>;
  close(): Promise<void>;
}

// One suite for every hold store implementation (as kysely runs its suite per dialect).
const stores: Array<[string, () => Promise<Made>]> = [
  [
    'memory',
    async () => {
      const clock = new ManualClock(1_000_000);
      const store = new MemoryHoldStore(clock);
      return { store, clock, close: () => store.close() };
    },
  ],
];
if (redisUrl) {
  stores.push([
    'redis',
    async () => {
      const t = await redisTarget();
      const clock = new ManualClock(1_000_000);
      const store = new RedisHoldStore(t.client, { prefix: t.prefix, clock, syncEveryMs: 0 });
      const wipe = async () => {
        const keys = await t.client.keys(`${t.prefix}*`);
        if (keys.length > 0) await t.client.del(...keys);
      };
      const key = (name: string) => `${t.prefix}{${A}}:${name}`;
      return { store, clock, wipe, redis: { client: t.client, key }, sync: () => store.sync(), close: async () => (await store.close(), await t.close()) };
    },
  ]);
}

const C = 1_000_000_000n; // one credit in nanocredits
const A = 'acct_1';
const KEY = 'k1';
const DAY = 'd:2026-01-05';
const periods = { daily: DAY, weekly: 'w:2026-01-05', monthly: 'm:2026-01' };
const snapshot = (balance: bigint, seq = 1n, totalUsage = 0n): LedgerUpdate => ({ accountId: A, account: { seq, balance, totalUsage } });
const keySnapshot = (usage: bigint, seq = 1n, byokUsage = 0n, hash = KEY): LedgerUpdate => ({
  accountId: A,
  keys: [{ hash, periods: ['all', DAY, periods.weekly, periods.monthly].map((period) => ({ seq, period, usage, byokUsage })) }],
});
const budget = (amount: bigint) => ({ amount, threshold: 100n * C, fractionPpm: 500_000n, ceiling: 50n * C });
const req = (id: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({ accountId: A, id, leaseMs: 30_000, refuseNegative: true, ...over });
const settle = (id: string, cost: bigint, windowMs = 60_000) => ({
  accountId: A,
  id,
  cost,
  byokUsage: 0n,
  keyHash: KEY,
  periods,
  windowMs,
  leaseMs: 30_000,
});

for (const [name, make] of stores) {
  describe(`hold store: ${name}`, () => {
    let made: Made | undefined;
    const open = async () => (made = await make());
    afterEach(async () => {
      await made?.close();
      made = undefined;
    });

    it('asks for a snapshot of the account (and of the key period) before it admits anything', async () => {
      const { store } = await open();
      expect(await store.admit(req('a', { balance: C }))).toEqual({ ok: false, refused: 'snapshot', account: true, key: false });
      await store.record(snapshot(10n * C));
      const key = { hash: KEY, period: DAY, includeByok: false, limit: 5n * C, amount: C };
      expect(await store.admit(req('a', { key }))).toEqual({ ok: false, refused: 'snapshot', account: false, key: true });
      await store.record(keySnapshot(0n));
      expect(await store.admit(req('a', { key, balance: C }))).toMatchObject({ ok: true, balance: 10n * C });
    });

    it('admits holds on the balance while they fit, atomically under concurrency, exact to the nanocredit', async () => {
      const { store } = await open();
      // 8 billion credits and change: more than a Lua number holds exactly in nanocredits.
      const balance = 8_000_000_000n * C + 123_456_789n;
      await store.record(snapshot(balance));
      const part = balance / 4n;
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.admit(req(`h${i}`, { balance: part }))));
      expect(results.filter((r) => r.ok)).toHaveLength(4);
      expect(results.find((r) => !r.ok)).toMatchObject({ refused: 'balance', balance, held: 4n * part });
      const left = balance - 4n * part;
      expect(await store.admit(req('over', { balance: left + 1n }))).toMatchObject({ ok: false, refused: 'balance' });
      expect(await store.admit(req('exact', { balance: left }))).toMatchObject({ ok: true });
    });

    it('refuses a negative balance first (prepaid), and never takes part of a request', async () => {
      const { store } = await open();
      await store.record(snapshot(-1n));
      expect(await store.admit(req('a', { balance: C }))).toEqual({ ok: false, refused: 'negative', balance: -1n });
      expect(await store.admit(req('free', { refuseNegative: false }))).toMatchObject({ ok: true, balance: -1n });
      await store.record(snapshot(2n * C, 2n));
      await store.record(keySnapshot(0n));
      const key = { hash: KEY, period: DAY, includeByok: false, limit: 10n * C, amount: C };
      // The key fits, the balance does not: nothing is held on the key either.
      expect(await store.admit(req('b', { key, balance: 3n * C }))).toMatchObject({ refused: 'balance' });
      expect(await store.view(A, { hash: KEY, periods: [DAY] })).toMatchObject({ balance: 2n * C });
      const again = await store.admit(req('c', { key: { ...key, amount: 10n * C } }));
      expect(again).toMatchObject({ ok: true });
    });

    it('counts a key limit per period: charged, pending and running, BYOK when the key includes it', async () => {
      const { store } = await open();
      await store.record(snapshot(100n * C));
      await store.record({
        accountId: A,
        keys: [
          {
            hash: KEY,
            periods: [
              { seq: 1n, period: DAY, usage: 2n * C, byokUsage: 3n * C },
              { seq: 1n, period: 'd:2026-01-04', usage: 50n * C, byokUsage: 0n },
            ],
          },
        ],
      });
      const key = (amount: bigint, includeByok = false) => ({ hash: KEY, period: DAY, includeByok, limit: 10n * C, amount });
      expect(await store.admit(req('a', { key: key(4n * C) }))).toMatchObject({ ok: true }); // 2 + 4 ≤ 10
      expect(await store.admit(req('b', { key: key(5n * C) }))).toEqual({ ok: false, refused: 'key', used: 2n * C, held: 4n * C });
      expect(await store.admit(req('c', { key: key(2n * C, true) }))).toEqual({ ok: false, refused: 'key', used: 5n * C, held: 4n * C });
      // 'a' ends costing 1: its running hold becomes a pending charge of 1.
      await store.settle({ ...settle('a', C), byokUsage: 0n });
      expect(await store.admit(req('d', { key: key(7n * C) }))).toMatchObject({ ok: true }); // 2 + 1 + 7 = 10
      expect((await store.view(A, { hash: KEY, periods: [DAY, 'd:2026-01-04'] }))?.keyUsage).toEqual(
        new Map([
          [DAY, { usage: 3n * C, byokUsage: 3n * C }],
          ['d:2026-01-04', { usage: 50n * C, byokUsage: 0n }],
        ]),
      );
    });

    it('holds the in-flight budget below the threshold only: min(fraction × balance, ceiling); a request above it is its weight', async () => {
      const { store } = await open();
      await store.record(snapshot(10n * C)); // budget 5
      expect(await store.admit(req('big', { budget: budget(6n * C) }))).toEqual({ ok: false, refused: 'weight', budget: 5n * C });
      expect(await store.admit(req('a', { budget: budget(3n * C) }))).toMatchObject({ ok: true });
      const r = await store.admit(req('b', { budget: budget(3n * C) }));
      expect(r).toMatchObject({ ok: false, refused: 'budget', budget: 5n * C, held: 3n * C });
      if (!r.ok && r.refused === 'budget') expect(r.holds).toEqual([{ amount: 3n * C, until: r.now + 30_000, settling: false }]);
      await store.record(snapshot(100n * C, 2n)); // at the threshold: not subject
      expect(await store.admit(req('c', { budget: budget(60n * C) }))).toMatchObject({ ok: true });
      expect((await store.view(A))?.budgetHeld).toBe(3n * C); // 'c' took no budget hold
      await store.record(snapshot(1000n * C, 1n)); // older: ignored
      expect((await store.view(A))?.balance).toBe(100n * C);
      await store.record(snapshot(99n * C + 999_999_999n, 3n)); // budget 49.9999999995 → ceiling 50 not reached
      expect(await store.admit(req('d', { budget: budget(46n * C + 999_999_999n) }))).toMatchObject({ ok: true }); // 3 + 46.999999999 ≤ 49.9999999995
      expect(await store.admit(req('e', { budget: budget(1n) }))).toMatchObject({ refused: 'budget' });
    });

    it('settles: the budget keeps the actual cost for the window; the balance sees it pending until the ledger records it', async () => {
      const { store, clock } = await open();
      await store.record(snapshot(10n * C, 5n, 1n * C));
      await store.admit(req('a', { balance: 4n * C, budget: budget(4n * C) }));
      await store.settle(settle('a', 2n * C));
      expect(await store.view(A)).toMatchObject({ balance: 8n * C, totalUsage: 3n * C, budgetHeld: 2n * C });
      // A reader of the ledger before the commit (seq 5) changes nothing; the commit (seq 6) replaces the pending charge.
      await store.record({ ...snapshot(10n * C, 5n, 1n * C), committed: [] });
      expect((await store.view(A))?.balance).toBe(8n * C);
      await store.record({ ...snapshot(8n * C, 6n, 3n * C), committed: ['a'] });
      expect(await store.view(A)).toMatchObject({ balance: 8n * C, totalUsage: 3n * C, budgetHeld: 2n * C });
      clock.advance(60_000);
      expect((await store.view(A))?.budgetHeld).toBe(0n);
      // A request that cost nothing leaves nothing behind.
      await store.admit(req('z', { balance: C, budget: budget(C) }));
      await store.settle(settle('z', 0n));
      expect(await store.view(A)).toMatchObject({ balance: 8n * C, budgetHeld: 0n });
    });

    it('leases: a running hold counts until its lease ends unless renewed; a settling hold is not renewed', async () => {
      const { store, clock } = await open();
      await store.record(snapshot(10n * C));
      await store.admit(req('run', { budget: budget(2n * C), leaseMs: 1000 }));
      await store.admit(req('done', { budget: budget(1n * C), leaseMs: 1000 }));
      await store.settle(settle('done', C, 60_000));
      clock.advance(500);
      await store.renew(A, 'run', 1000); // now until T + 1500
      await store.renew(A, 'done', 120_000);
      clock.advance(999);
      expect((await store.view(A))?.budgetHeld).toBe(3n * C);
      clock.advance(1);
      expect((await store.view(A))?.budgetHeld).toBe(1n * C); // 'run' lapsed: a dead process's hold stops counting
      await store.renew(A, 'run', 1000); // a lapsed hold is not brought back
      expect((await store.view(A))?.budgetHeld).toBe(1n * C);
    });

    it('an id admitted again holds what it is admitted for now, scope by scope: a hold on another key runs on to its own lease end', async () => {
      const { store, clock } = await open();
      await store.record(snapshot(10n * C));
      for (const hash of [KEY, 'k2']) await store.record(keySnapshot(0n, 1n, 0n, hash));
      const onKey = (hash: string, amount: bigint) => ({ hash, period: DAY, includeByok: false, limit: 8n * C, amount });
      expect(await store.admit(req('g1', { key: onKey(KEY, 5n * C), balance: C, leaseMs: 30_000 }))).toMatchObject({ ok: true });
      expect(await store.admit(req('g1', { key: onKey('k2', C), balance: 2n * C, leaseMs: 60_000 }))).toMatchObject({ ok: true });
      // The balance's hold was replaced; the first key's is still there.
      expect((await store.view(A))?.runningHeld).toBe(2n * C);
      expect(await store.admit(req('g2', { key: onKey(KEY, 4n * C) }))).toMatchObject({ ok: false, refused: 'key', held: 5n * C });
      // Settled as a request of key k2: its holds on the balance and on k2 go, not the one on the first key.
      await store.settle({ ...settle('g1', 0n), keyHash: 'k2' });
      expect((await store.view(A))?.runningHeld).toBe(0n);
      expect(await store.admit(req('g2', { key: onKey(KEY, 4n * C) }))).toMatchObject({ ok: false, refused: 'key', held: 5n * C });
      clock.advance(30_000); // its lease is over
      expect(await store.admit(req('g2', { key: onKey(KEY, 4n * C) }))).toMatchObject({ ok: true });
    });

    it('a pending charge whose process died lapses and drops the snapshot: the next admission reloads from the ledger', async () => {
      const { store, clock } = await open();
      await store.record(snapshot(10n * C));
      await store.admit(req('a', { balance: C }));
      await store.settle({ ...settle('a', C), leaseMs: 1000 });
      clock.advance(999);
      expect((await store.view(A))?.balance).toBe(9n * C);
      clock.advance(1);
      expect(await store.view(A)).toBeUndefined();
      expect(await store.admit(req('b', { balance: C }))).toMatchObject({ refused: 'snapshot', account: true });
    });

    it('settles the requests that end in one turn together, each as if alone, and a view sees every write issued before it', async () => {
      const { store } = await open();
      await store.record(snapshot(40n * C, 1n)); // below the threshold: the budget applies (20)
      await store.record(keySnapshot(0n));
      const key = (amount: bigint) => ({ hash: KEY, period: DAY, includeByok: false, limit: 50n * C, amount });
      const ids = Array.from({ length: 12 }, (_, i) => `t${i}`);
      for (const id of ids) expect(await store.admit(req(id, { key: key(C), balance: C, budget: budget(C) }))).toMatchObject({ ok: true });
      // All end at once (nobody waits for the store): costs 1, 2, … nanocredits, one of them nothing.
      const settled = ids.map((id, i) => store.settle({ ...settle(id, BigInt(i)), byokUsage: BigInt(i % 2) }));
      // Issued after them, without waiting: the view sees them all.
      const total = (11n * 12n) / 2n;
      expect(await store.view(A, { hash: KEY, periods: [DAY] })).toEqual({
        balance: 40n * C - total,
        totalUsage: total,
        keyUsage: new Map([[DAY, { usage: total, byokUsage: 6n }]]),
        budgetHeld: total,
        runningHeld: 0n,
      });
      await Promise.all(settled);
      // The commit that records half of them, and a credit entry, queued in one turn after them: in order.
      const committed = ids.slice(0, 6);
      const half = (5n * 6n) / 2n;
      void store.record({ ...snapshot(40n * C - half, 2n, half), committed });
      void store.record(snapshot(200n * C - half, 3n, half));
      expect(await store.view(A)).toMatchObject({ balance: 200n * C - total, totalUsage: total, budgetHeld: total });
      expect(await store.admit(req('after', { key: key(50n * C - total), balance: 200n * C - total }))).toMatchObject({ ok: true });
    });

    if (name === 'redis') {
      it('Redis restarted empty: the process puts back its running and settling holds and pending charges', async () => {
        const m = await open();
        const { store } = m;
        await m.sync?.();
        await store.record(snapshot(10n * C));
        await store.admit(req('run', { balance: 2n * C, budget: budget(2n * C) }));
        await store.admit(req('done', { balance: 1n * C, budget: budget(1n * C) }));
        await store.settle(settle('done', C));
        await m.wipe?.();
        expect(await store.view(A)).toBeUndefined();
        await m.sync?.();
        await store.record(snapshot(10n * C)); // the snapshot comes back from the ledger
        expect(await store.view(A)).toMatchObject({ balance: 9n * C, budgetHeld: 3n * C });
        expect(await store.admit(req('x', { balance: 8n * C }))).toMatchObject({ refused: 'balance', held: 2n * C });
        await store.record({ ...snapshot(9n * C, 2n), committed: ['done'] });
        await m.wipe?.();
        await m.sync?.();
        await store.record(snapshot(9n * C, 2n));
        expect(await store.view(A)).toMatchObject({ balance: 9n * C, budgetHeld: 3n * C }); // the recorded charge is not put back
      });

      it('what the process would put back lapses as it does in Redis: a hold at the end of its lease, renewed or not, a settling one after the window', async () => {
        const m = await open();
        const { store, clock } = m;
        await m.sync?.();
        await store.record(snapshot(50n * C)); // below the threshold: the budget applies
        const restarted = async (seq: bigint) => {
          await m.wipe?.();
          await m.sync?.();
          await store.record(snapshot(50n * C - C, seq, C));
          return store.view(A);
        };
        await store.admit(req('lapses', { balance: 2n * C, leaseMs: 30_000 }));
        await store.admit(req('renewed', { balance: 4n * C, leaseMs: 30_000 }));
        await store.admit(req('done', { budget: budget(C) }));
        await store.settle(settle('done', C, 60_000));
        await store.record({ ...snapshot(50n * C - C, 2n, C), committed: ['done'] });
        clock.advance(20_000);
        await store.renew(A, 'renewed', 30_000); // now until 50 s
        clock.advance(11_000); // 31 s: 'lapses' is past its lease
        await m.sync?.();
        expect(await restarted(3n)).toMatchObject({ runningHeld: 4n * C, budgetHeld: C });
        clock.advance(20_000); // 51 s: 'renewed' too
        await m.sync?.();
        expect(await restarted(4n)).toMatchObject({ runningHeld: 0n, budgetHeld: C });
        clock.advance(10_000); // 61 s: 'done' left the settlement window
        await m.sync?.();
        expect(await restarted(5n)).toMatchObject({ runningHeld: 0n, budgetHeld: 0n });
      });

      /** The pending charges' sums in the account's totals hash (hold-scripts.ts, KEYS[3]). */
      const sumFields = async (m: Made) => (await m.redis!.client.hkeys(m.redis!.key('t'))).filter((f) => f === 'p' || f.startsWith('p:'));

      it('pending charges written before Redis kept their sums (an older gateway) count once the sums are added up, and move them after', async () => {
        const m = await open();
        const { store } = m;
        const { client, key } = m.redis!;
        await store.record(snapshot(10n * C));
        await store.record(keySnapshot(C));
        const byok = (id: string, cost: bigint, byokUsage: bigint) => ({ ...settle(id, cost), byokUsage });
        for (const [id, cost, b] of [
          ['a', 2n * C, 0n],
          ['b', C + 7n, 3n],
          ['c', 0n, 5n * C],
        ] as const) {
          await store.admit(req(id, { balance: 3n * C }));
          await store.settle(byok(id, cost, b));
        }
        const sums = await sumFields(m);
        expect(sums).toContain('p');
        await client.hdel(key('t'), ...sums); // the state as a gateway without the sums left it
        const periods = ['all', DAY, 'w:2026-01-05', 'm:2026-01'];
        const view = await store.view(A, { hash: KEY, periods });
        expect(view).toMatchObject({ balance: 10n * C - 3n * C - 7n, totalUsage: 3n * C + 7n });
        for (const p of periods) expect(view?.keyUsage?.get(p)).toEqual({ usage: C + 3n * C + 7n, byokUsage: 5n * C + 3n });
        // The commit of `b` takes its part away; `a` settled again replaces its charge (counted once).
        await store.record({ ...snapshot(10n * C - C - 7n, 2n, C + 7n), committed: ['b'] });
        await store.settle(byok('a', C, 0n));
        expect(await store.view(A)).toMatchObject({ balance: 9n * C - 7n - C, totalUsage: 2n * C + 7n });
        // Once none is pending, no sum is left behind but the account's zero.
        await store.record({ ...snapshot(8n * C - 7n, 3n, 2n * C + 7n), committed: ['a', 'c'] });
        expect(await store.view(A)).toMatchObject({ balance: 8n * C - 7n, totalUsage: 2n * C + 7n });
        expect(await sumFields(m)).toEqual(['p']);
        expect(await client.hget(key('t'), 'p')).toMatch(/^0 0 0 \d+$/); // no cost, no charge, when added up
      });

      it('the sums of pending charges heal: a lost pending hash, a repeated commit id, a sum an older gateway left stale, a read that adds them up', async () => {
        const m = await open();
        const { store, clock } = m;
        const { client, key } = m.redis!;
        await store.record(snapshot(10n * C));
        // The pending hash lost while the totals survived: the commit's snapshot is all there is, no phantom charge.
        await store.settle(settle('a', C));
        await client.del(key('p'));
        await store.record({ ...snapshot(9n * C, 2n, C), committed: ['a'] });
        expect((await store.view(A))?.balance).toBe(9n * C);
        // A commit naming a generation twice takes its charge away once.
        await store.settle(settle('b', 2n * C));
        await store.record({ ...snapshot(7n * C, 3n, 3n * C), committed: ['b', 'b'] });
        expect((await store.view(A))?.balance).toBe(7n * C);
        // A sum made stale by a writer that does not keep them (same count of charges, another amount)
        // is added up again within a second.
        await store.settle(settle('c', 3n * C));
        await client.hset(key('t'), 'p', `5 0 1 ${clock.now()}`); // 5 credits as (hi, lo)
        expect((await store.view(A))?.balance).toBe(7n * C - 5n * C); // trusted for now
        clock.advance(1000);
        expect((await store.view(A))?.balance).toBe(4n * C);
        // A read that writes the sums leaves them to expire with the account's other keys.
        await client.del(key('t'));
        expect((await store.view(A))?.balance).toBe(4n * C);
        expect(await client.pttl(key('t'))).toBeGreaterThan(0);
      });

      it('one call a turn for an account: every admission, settlement, renewal and record queued meanwhile, in order', async () => {
        const { store } = await open();
        await store.record(snapshot(40n * C, 1n));
        for (const id of ['a', 'b', 'c', 'd']) await store.admit(req(id, { balance: C, budget: budget(C) }));
        const client = (store as unknown as { redis: Record<string, (...a: string[]) => Promise<unknown>> }).redis;
        const apply = client.tollgateApply!;
        let calls = 0;
        client.tollgateApply = (...a: string[]) => ((calls += 1), apply.apply(client, a));
        try {
          const [, , , , , admitted] = await Promise.all([
            store.settle(settle('a', 3n)),
            store.renew(A, 'b', 60_000),
            store.settle(settle('c', 0n)),
            store.record({ ...snapshot(40n * C - 3n, 2n, 3n), committed: ['a'] }),
            store.settle(settle('d', 5n)),
            store.admit(req('e', { balance: 40n * C - 8n - C })), // exactly what is left once the settlements before it are applied
          ]);
          expect(calls).toBe(1);
          expect(admitted).toMatchObject({ ok: true, balance: 40n * C - 8n });
          expect(await store.view(A)).toMatchObject({ balance: 40n * C - 8n, totalUsage: 8n, budgetHeld: C + 8n, runningHeld: 40n * C - 8n });
        } finally {
          client.tollgateApply = apply;
        }
      });

      it('a write nobody waits for (a commit record) waits a few ms for an admission to carry it, or goes alone', async () => {
        const { store } = await open();
        await store.record(snapshot(40n * C, 1n));
        const client = (store as unknown as { redis: Record<string, (...a: string[]) => Promise<unknown>> }).redis;
        const apply = client.tollgateApply!;
        let calls = 0;
        client.tollgateApply = (...a: string[]) => ((calls += 1), apply.apply(client, a));
        try {
          const recorded = store.record(snapshot(40n * C - 3n, 2n));
          await new Promise((resolve) => setImmediate(resolve));
          expect(calls).toBe(0); // still waiting
          expect(await store.admit(req('c', { balance: C }))).toMatchObject({ ok: true, balance: 40n * C - 3n });
          expect(calls).toBe(1); // the admission carried it
          await recorded;
          await store.record(snapshot(40n * C - 7n, 3n)); // alone: written within a few ms
          expect(calls).toBe(2);
        } finally {
          client.tollgateApply = apply;
        }
        expect(await store.view(A)).toMatchObject({ balance: 40n * C - 7n, runningHeld: C });
      });

      it('a settlement goes out within two turns (with what the next poll brings), without waiting for an admission: other processes see the actual cost, not the estimate', async () => {
        const { store } = await open();
        await store.record(snapshot(40n * C, 1n));
        await store.admit(req('a', { balance: C, budget: budget(C) }));
        const client = (store as unknown as { redis: Record<string, (...a: string[]) => Promise<unknown>> }).redis;
        const apply = client.tollgateApply!;
        let calls = 0;
        client.tollgateApply = (...a: string[]) => ((calls += 1), apply.apply(client, a));
        try {
          const settled = store.settle(settle('a', 3n * C));
          await new Promise((resolve) => setImmediate(resolve));
          await new Promise((resolve) => setImmediate(resolve));
          expect(calls).toBe(1);
          await settled;
        } finally {
          client.tollgateApply = apply;
        }
        // Written with no admission to carry it; Redis holds the actual cost (3), not the running hold (1).
        expect(calls).toBe(1);
        expect(await store.view(A)).toMatchObject({ balance: 40n * C - 3n * C, runningHeld: 0n });
      });

      it('fails closed within its deadline when Redis does not answer (503 limits_unavailable)', async () => {
        // A client on a port where nothing listens: every command fails or waits.
        const client = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 });
        client.on('error', () => undefined);
        const store = new RedisHoldStore(client, { timeoutMs: 300, syncEveryMs: 0 });
        const err = await store.admit(req('a', { balance: C })).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(GatewayError);
        expect(err).toMatchObject({ status: 503, metadata: { reason: 'limits_unavailable' }, headers: { 'retry-after': '2' } });
        await store.settle(settle('a', C)); // never throws: kept and retried
        await store.close();
        client.disconnect();
      });
    }
  });
}

describe('hold store: Redis, one argument an operation', () => {
  it.runIf(redisUrl)('refuses an operation whose field holds a tab, rather than shifting the fields after it', async () => {
    const t = await redisTarget();
    const store = new RedisHoldStore(t.client, { prefix: t.prefix, clock: new ManualClock(1_000_000), syncEveryMs: 0 });
    try {
      await store.record(snapshot(10n * C));
      // Issued in one turn, so they go in one call: the bad one fails alone.
      const bad = Promise.resolve(store.admit(req('a\tb', { balance: C }))).catch((e: unknown) => e);
      const good = store.admit(req('g', { balance: C }));
      expect(String(await bad)).toContain('holds a tab');
      expect(await good).toMatchObject({ ok: true });
      // Nothing was held for the bad one: all the balance but 'g's hold is there for the next request.
      expect(await store.admit(req('c', { balance: 9n * C }))).toMatchObject({ ok: true });
      // The script itself refuses a call in another form (a field an argument) instead of reading it as nothing.
      const keys = ['s', 'h', 't', 'p', 'z'].map((k) => `${t.prefix}{${A}}:${k}`);
      const apply = (t.client as unknown as { tollgateApply: (...args: string[]) => Promise<unknown> }).tollgateApply.bind(t.client);
      await expect(apply(...keys, '', 'R', '', '0', '0')).rejects.toThrow('does not end with a tab');
    } finally {
      await store.close();
      await t.close();
    }
  });
});

describe('hold store: Redis, an answer an operation cannot read', () => {
  it.runIf(redisUrl)('fails that operation alone: the others of its call are still answered', async () => {
    const t = await redisTarget();
    const store = new RedisHoldStore(t.client, { prefix: t.prefix, clock: new ManualClock(1_000_000), syncEveryMs: 0 });
    // Fault injection: the first operation's answer in each call comes back unreadable.
    const seam = store as unknown as { applyCall: (accountId: string, encoded: string[]) => Promise<unknown> };
    const real = seam.applyCall.bind(store);
    seam.applyCall = async (accountId, encoded) => {
      const answers = (await real(accountId, encoded)) as unknown[];
      return encoded.length > 1 ? [answers[0], 'ok', ...answers.slice(2)] : answers;
    };
    try {
      await store.record(snapshot(10n * C));
      // Issued in one turn, so they go in one call.
      const bad = Promise.resolve(store.admit(req('bad', { balance: C }))).catch((e: unknown) => e);
      const good = store.admit(req('good', { balance: C }));
      expect(await bad).toBeInstanceOf(Error);
      expect(await good).toMatchObject({ ok: true });
    } finally {
      await store.close();
      await t.close();
    }
  });
});

describe('hold store: Redis, a ledger commit whose record failed', () => {
  it.runIf(redisUrl)('is recorded when the store syncs: its snapshot replaces the pending charge, which is not counted twice', async () => {
    const t = await redisTarget();
    const store = new RedisHoldStore(t.client, { prefix: t.prefix, clock: new ManualClock(1_000_000), syncEveryMs: 0 });
    const scripts = t.client as unknown as { tollgateApply: (...args: string[]) => Promise<unknown> };
    try {
      await store.record(snapshot(10n * C));
      await store.record(keySnapshot(0n));
      const key = { hash: KEY, period: DAY, includeByok: false, limit: 10n * C, amount: C };
      expect(await store.admit(req('a', { key, balance: C }))).toMatchObject({ ok: true });
      await store.settle(settle('a', 2n * C)); // pending: 2
      // The ledger commits 'a' (key usage 2 at seq 2, balance 8), and Redis refuses that record once.
      const apply = scripts.tollgateApply;
      scripts.tollgateApply = () => Promise.reject(new Error('Redis refused the write'));
      await store.record({ ...keySnapshot(2n * C, 2n), account: { seq: 2n, balance: 8n * C, totalUsage: 2n * C }, committed: ['a'] });
      scripts.tollgateApply = apply;
      await store.sync(); // the record is written again
      let view = await store.view(A, { hash: KEY, periods: [DAY] });
      expect(view?.keyUsage?.get(DAY)).toEqual({ usage: 2n * C, byokUsage: 0n });
      expect(view).toMatchObject({ balance: 8n * C, totalUsage: 2n * C });
      // A later commit's snapshot counts 'a' too: had the first record been lost, 'a' would still be
      // pending beside it, counted twice.
      expect(await store.admit(req('b', { key, balance: C }))).toMatchObject({ ok: true });
      await store.settle(settle('b', C));
      await store.record({ ...keySnapshot(3n * C, 3n), account: { seq: 3n, balance: 7n * C, totalUsage: 3n * C }, committed: ['b'] });
      view = await store.view(A, { hash: KEY, periods: [DAY] });
      expect(view?.keyUsage?.get(DAY)).toEqual({ usage: 3n * C, byokUsage: 0n });
      expect(view).toMatchObject({ balance: 7n * C, totalUsage: 3n * C });
    } finally {
      await store.close();
      await t.close();
    }
  });
});

describe('hold store: Redis, records of ledger commits from several processes', () => {
  // Two processes on one Redis: each records its own commits as they return, so a later commit's
  // record can land first. Its snapshot already counts the earlier commit's charges, which are still
  // pending until the earlier record lands.
  const twoProcesses = async () => {
    const t = await redisTarget();
    const clock = new ManualClock(1_000_000);
    const [p1, p2] = [0, 1].map(() => new RedisHoldStore(t.client, { prefix: t.prefix, clock, syncEveryMs: 0 }));
    return {
      p1: p1 as RedisHoldStore,
      p2: p2 as RedisHoldStore,
      clock,
      close: async () => (await Promise.all([p1?.close(), p2?.close()]), await t.close()),
    };
  };
  const commit = (seq: bigint, balance: bigint, usage: bigint, committed: string[]): LedgerUpdate => ({
    ...keySnapshot(usage, seq),
    account: { seq, balance, totalUsage: usage },
    committed,
  });
  const keyAt = (amount: bigint) => ({ hash: KEY, period: DAY, includeByok: false, limit: 4n * C, amount });
  const used = async (store: HoldStore) => {
    const v = await store.view(A, { hash: KEY, periods: [DAY] });
    return { balance: v?.balance, key: v?.keyUsage?.get(DAY)?.usage };
  };

  it.runIf(redisUrl)('a later commit recorded first counts nothing twice: it waits for the one before it', async () => {
    const { p1, p2, close } = await twoProcesses();
    try {
      await p1.record(snapshot(10n * C));
      await p1.record(keySnapshot(0n));
      // p1's request costs 1, p2's 2; the ledger commits p1's (seq 2), then p2's (seq 3).
      expect(await p1.admit(req('a', { key: keyAt(C), balance: C }))).toMatchObject({ ok: true });
      expect(await p2.admit(req('b', { key: keyAt(2n * C), balance: 2n * C }))).toMatchObject({ ok: true });
      await p1.settle(settle('a', C));
      await p2.settle(settle('b', 2n * C));
      // p2's record lands first. Its snapshot (usage 3) counts 'a', which is still pending.
      await p2.record(commit(3n, 7n * C, 3n * C, ['b']));
      expect(await used(p2)).toEqual({ balance: 7n * C, key: 3n * C });
      // The key's limit is 4: 3 used, so 1 more fits (counted twice, it would read 4 and refuse).
      expect(await p2.admit(req('c', { key: keyAt(C), balance: C }))).toMatchObject({ ok: true });
      await p2.settle(settle('c', 0n));
      // p1's record lands: the one waiting goes with it, and the view stays exact.
      await p1.record(commit(2n, 9n * C, C, ['a']));
      expect(await used(p1)).toEqual({ balance: 7n * C, key: 3n * C });
      // Nothing was left waiting: a commit after them is applied at once.
      await p2.record(commit(4n, 7n * C, 3n * C, []));
      expect(await used(p2)).toEqual({ balance: 7n * C, key: 3n * C });
    } finally {
      await close();
    }
  });

  it.runIf(redisUrl)(
    'a record that never comes holds the ones after it back for half a second at most (a credit reaches every process within a second); a key seen first is written at once',
    async () => {
      const { p1, p2, clock, close } = await twoProcesses();
      try {
        await p1.record(snapshot(10n * C));
        await p1.record(keySnapshot(0n));
        await p1.admit(req('a', { key: keyAt(C), balance: C }));
        await p1.settle(settle('a', C)); // its process dies after its commit (seq 2), before recording it
        // A credit of 100 (seq 3) lands, skipping seq 2: it waits; the balance is the snapshot less 'a'.
        await p2.record({ accountId: A, account: { seq: 3n, balance: 109n * C, totalUsage: C } });
        expect(await used(p2)).toEqual({ balance: 9n * C, key: C });
        // A key first used now is admitted (its snapshot goes in at once, though its seq skips one).
        const k2 = { hash: 'k2', period: DAY, includeByok: false, limit: 4n * C, amount: C };
        await p2.record({ ...keySnapshot(0n, 3n, 0n, 'k2'), account: { seq: 3n, balance: 109n * C, totalUsage: C } });
        expect(await p2.admit(req('k2-first', { key: k2 }))).toMatchObject({ ok: true });
        clock.advance(499);
        expect((await used(p2)).balance).toBe(9n * C);
        // Half a second on, it is applied without the one before it. 'a' is then counted twice (in the
        // snapshot and pending) until its lease ends, when the snapshot is dropped and read again.
        clock.advance(1);
        expect(await used(p2)).toEqual({ balance: 108n * C, key: C });
        clock.advance(30_000);
        expect(await p2.view(A)).toBeUndefined();
      } finally {
        await close();
      }
    },
  );
});

describe('hold store: memory and Redis agree (random operations)', () => {
  it.runIf(redisUrl)(
    'answer every admission, settlement and view alike',
    async () => {
      const ops = fc.array(
        fc.oneof(
          fc.record({
            op: fc.constant('admit' as const),
            id: fc.integer({ min: 0, max: 5 }),
            amount: fc.bigInt({ min: 0n, max: 6n * C }),
            key: fc.constantFrom(KEY, 'k2'),
          }),
          fc.record({
            op: fc.constant('settle' as const),
            id: fc.integer({ min: 0, max: 5 }),
            amount: fc.bigInt({ min: 0n, max: 6n * C }),
            byok: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 2n * C })),
            key: fc.constantFrom(KEY, 'k2'),
          }),
          fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40_000 }) }),
          fc.record({
            op: fc.constant('commit' as const),
            ids: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
            balance: fc.bigInt({ min: -C, max: 20n * C }),
          }),
        ),
        { maxLength: 25 },
      );
      // A budget refusal's holds come in no particular order (admission sorts them): compared as a set.
      const inOrder = (a: unknown) =>
        a && typeof a === 'object' && 'holds' in a && Array.isArray(a.holds)
          ? {
              ...a,
              holds: [...(a.holds as HoldView[])].sort((x, y) => x.until - y.until || Number(x.amount - y.amount) || Number(x.settling) - Number(y.settling)),
            }
          : a;
      await fc.assert(
        fc.asyncProperty(ops, async (list) => {
          const [mem, red] = [await (stores[0] as [string, () => Promise<Made>])[1](), await (stores[1] as [string, () => Promise<Made>])[1]()];
          try {
            let seq = 1n;
            for (const m of [mem, red]) await m.store.record(snapshot(10n * C, seq));
            for (const o of list) {
              const answers = [];
              for (const m of [mem, red]) {
                if (o.op === 'admit') {
                  const key = { hash: o.key, period: DAY, includeByok: o.key === 'k2', limit: 8n * C, amount: o.amount };
                  await m.store.record(keySnapshot(0n, 1n, 0n, o.key));
                  answers.push(await m.store.admit(req(`g${o.id}`, { key, balance: o.amount, budget: budget(o.amount) })));
                } else if (o.op === 'settle') {
                  await m.store.settle({ ...settle(`g${o.id}`, o.amount), byokUsage: o.byok, keyHash: o.key });
                } else if (o.op === 'advance') {
                  m.clock.advance(o.ms);
                } else {
                  await m.store.record({ ...snapshot(o.balance, seq + 1n), committed: o.ids.map((id) => `g${id}`) });
                }
                // Every period a charge counts in, for both keys: each pending charge's part of each sum.
                for (const hash of [KEY, 'k2']) answers.push(await m.store.view(A, { hash, periods: ['all', DAY, periods.weekly, periods.monthly] }));
              }
              if (o.op === 'commit') seq += 1n;
              expect(answers.slice(answers.length / 2).map(inOrder)).toEqual(answers.slice(0, answers.length / 2).map(inOrder));
            }
          } finally {
            await mem.close();
            await red.close();
          }
        }),
        { numRuns: 40 },
      );
      // ~3,000 Redis round trips: ~1 s alone, but once over 20 s in a full run on a loaded 2-core machine.
    },
    90_000,
  );
});

describe('memory hold store: snapshots read from the ledger stand for snapshotTtlMs', () => {
  it("a fresh read stands its lifetime; this process's commits do not extend it, a new read does", async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryHoldStore(clock, { snapshotTtlMs: 1000 });
    const key = { hash: KEY, period: DAY, amount: C, limit: 10n * C, includeByok: false };
    await store.record({ ...snapshot(10n * C), readAt: clock.now() });
    await store.record({ ...keySnapshot(0n), readAt: clock.now() });
    expect(await store.admit(req('a', { key, balance: C }))).toMatchObject({ ok: true });
    expect(await store.view(A)).toMatchObject({ balance: 10n * C });
    // A commit of this process's own (no readAt) brings a newer snapshot, but not a newer read.
    clock.advance(600);
    await store.record({ ...snapshot(9n * C, 2n), ...keySnapshot(C, 2n), accountId: A });
    clock.advance(400);
    // The read is 1 s old: another process may have changed the account since; it is asked for again.
    expect(await store.admit(req('b', { balance: C }))).toEqual({ ok: false, refused: 'snapshot', account: true, key: false });
    expect(await store.view(A)).toBeUndefined();
    // Read again, with what a CLI purchase did meanwhile (seq 3): it stands, and the key's stale read is asked for.
    await store.record({ ...snapshot(109n * C, 3n), readAt: clock.now() });
    expect(await store.view(A)).toMatchObject({ balance: 109n * C });
    expect(await store.admit(req('c', { key, balance: C }))).toEqual({ ok: false, refused: 'snapshot', account: false, key: true });
    // A read older than a commit keeps the commit's snapshot and counts as read.
    await store.record({ ...keySnapshot(0n, 1n), readAt: clock.now() });
    expect(await store.admit(req('d', { key: { ...key, amount: 8n * C } }))).toMatchObject({ ok: true }); // used 1 (seq 2) + held 1 ('a') + 8 ≤ 10
    expect(await store.admit(req('e', { key: { ...key, amount: 1n } }))).toMatchObject({ ok: false, refused: 'key' });
  });

  it('without snapshotTtlMs a snapshot stands until a newer one replaces it', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryHoldStore(clock);
    await store.record(snapshot(10n * C));
    clock.advance(86_400_000);
    expect(await store.admit(req('a', { balance: C }))).toMatchObject({ ok: true, balance: 10n * C });
  });
});

describe('expiry heap', () => {
  it('pops in deadline order whatever the push order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 })), (times) => {
        const h = new ExpiryHeap();
        times.forEach((at, i) => h.push({ at, id: String(i), version: i }));
        const out: number[] = [];
        for (let e = h.pop(); e; e = h.pop()) out.push(e.at);
        expect(out).toEqual([...times].sort((x, y) => x - y));
      }),
    );
  });
});
