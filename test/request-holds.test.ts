import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestHolds } from '../src/limits/request-holds.js';

/**
 * The holds as the memory store kept them before RequestHolds, and as the Redis store keeps them:
 * each scope (the budget, the balance, each key's limit) a map of holds by request id, each hold with
 * its own lease end; a hold replaced scope by scope; a settlement lets go of the budget's, the
 * balance's and its own key's; a renewal extends each of the request's holds; a hold counts until the
 * first look at or after its end.
 */
class ScopeByScope {
  readonly scopes = new Map<string, Map<string, { amount: bigint; until: number }>>();

  private scope(name: string): Map<string, { amount: bigint; until: number }> {
    let s = this.scopes.get(name);
    if (!s) this.scopes.set(name, (s = new Map()));
    return s;
  }

  hold(id: string, until: number, keyHash: string | undefined, keyAmount: bigint, balance: bigint | undefined, budget: bigint | undefined): void {
    if (keyHash !== undefined) this.scope(`k:${keyHash}`).set(id, { amount: keyAmount, until });
    if (balance !== undefined) this.scope('balance').set(id, { amount: balance, until });
    if (budget !== undefined) this.scope('budget').set(id, { amount: budget, until });
  }

  release(id: string, keyHash: string): boolean {
    const had = this.scope('budget').delete(id);
    this.scope('balance').delete(id);
    this.scope(`k:${keyHash}`).delete(id);
    return had;
  }

  renew(id: string, until: number): void {
    for (const s of this.scopes.values()) {
      const h = s.get(id);
      if (h && h.until < until) h.until = until;
    }
  }

  lapse(now: number): void {
    for (const s of this.scopes.values()) for (const [id, h] of s) if (h.until <= now) s.delete(id);
  }

  total(name: string): bigint {
    let t = 0n;
    for (const h of this.scopes.get(name)?.values() ?? []) t += h.amount;
    return t;
  }

  requests(): number {
    const ids = new Set<string>();
    for (const s of this.scopes.values()) for (const id of s.keys()) ids.add(id);
    return ids.size;
  }
}

type Op =
  | { op: 'hold'; id: number; key: string | null; keyAmount: bigint; balance: bigint | null; budget: bigint | null; lease: number }
  | { op: 'release'; id: number; key: string }
  | { op: 'renew'; id: number; lease: number }
  | { op: 'advance'; ms: number };

const KEYS = ['k1', 'k2', 'k3'];
const amount = fc.bigInt({ min: 0n, max: 1000n });
const ops: fc.Arbitrary<Op[]> = fc.array(
  fc.oneof(
    fc.record({
      op: fc.constant('hold' as const),
      id: fc.integer({ min: 0, max: 6 }),
      key: fc.option(fc.constantFrom(...KEYS)),
      keyAmount: amount,
      balance: fc.option(amount),
      budget: fc.option(amount),
      lease: fc.integer({ min: 1, max: 100 }),
    }),
    fc.record({ op: fc.constant('release' as const), id: fc.integer({ min: 0, max: 6 }), key: fc.constantFrom(...KEYS) }),
    fc.record({ op: fc.constant('renew' as const), id: fc.integer({ min: 0, max: 6 }), lease: fc.integer({ min: 1, max: 150 }) }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 80 }) }),
  ),
  { maxLength: 60 },
);

describe('request holds', () => {
  it('hold, let go, renew and lapse as a map a scope would, scope by scope (an id held again, for another key too)', () => {
    fc.assert(
      fc.property(ops, (list) => {
        const holds = new RequestHolds();
        const ref = new ScopeByScope();
        let now = 1_000;
        for (const o of list) {
          holds.lapse(now);
          ref.lapse(now);
          if (o.op === 'hold') {
            const args = [`g${o.id}`, now + o.lease, o.key ?? undefined, o.keyAmount, o.balance ?? undefined, o.budget ?? undefined] as const;
            holds.hold(...args);
            ref.hold(...args);
          } else if (o.op === 'release') {
            expect(holds.release(`g${o.id}`, o.key)).toBe(ref.release(`g${o.id}`, o.key));
          } else if (o.op === 'renew') {
            holds.renew(`g${o.id}`, now + o.lease);
            ref.renew(`g${o.id}`, now + o.lease);
          } else now += o.ms;
          holds.lapse(now);
          ref.lapse(now);
          expect(holds.budgetHeld).toBe(ref.total('budget'));
          expect(holds.balanceHeld).toBe(ref.total('balance'));
          for (const k of KEYS) expect(holds.keyHeld(k)).toBe(ref.total(`k:${k}`));
          expect(holds.size).toBe(ref.requests());
          const byEnd = (a: { until: number; amount: bigint }, b: { until: number; amount: bigint }) => a.until - b.until || Number(a.amount - b.amount);
          const budget = [...(ref.scopes.get('budget')?.values() ?? [])].map((h) => ({ amount: h.amount, until: h.until, settling: false }));
          expect(holds.budgetHolds().sort(byEnd)).toEqual(budget.sort(byEnd));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('lets a request go whole when it is settled, and keeps nothing of it', () => {
    const holds = new RequestHolds();
    holds.hold('a', 100, 'k1', 5n, 7n, 3n);
    holds.hold('b', 100, 'k1', 1n, 1n, undefined);
    expect([holds.keyHeld('k1'), holds.balanceHeld, holds.budgetHeld, holds.size]).toEqual([6n, 8n, 3n, 2]);
    expect(holds.release('a', 'k1')).toBe(true);
    expect(holds.release('b', 'k1')).toBe(false);
    expect([holds.keyHeld('k1'), holds.balanceHeld, holds.budgetHeld, holds.size]).toEqual([0n, 0n, 0n, 0]);
    // A request with nothing to hold leaves no record.
    holds.hold('c', 100, undefined, 0n, undefined, undefined);
    expect(holds.size).toBe(0);
  });

  it('keeps its heap of lease ends bounded while requests come and go (stale entries dropped)', () => {
    const holds = new RequestHolds();
    for (let i = 0; i < 10_000; i++) {
      holds.hold(`r${i}`, 1_000_000 + i, 'k1', 1n, 1n, 1n);
      if (i >= 32) holds.release(`r${i - 32}`, 'k1');
      holds.renew(`r${i}`, 2_000_000 + i);
    }
    expect(holds.size).toBe(32);
    expect((holds as unknown as { expiries: { size: number } }).expiries.size).toBeLessThanOrEqual(2 * 32 + 64 + 2);
  });
});
