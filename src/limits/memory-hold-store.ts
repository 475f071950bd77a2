import type { Nano } from '../ledger/money.js';
import { ExpiryHeap } from './expiry-heap.js';
import type { AcquireResult, HoldStore, HoldView } from './hold-store.js';

interface Hold extends HoldView {
  version: number;
}

interface Scope {
  total: Nano;
  holds: Map<string, Hold>;
  expiries: ExpiryHeap;
}

/**
 * Holds in this process: one node's limits, exact, with no round trip. Each scope keeps its running
 * total and a heap of deadlines, so a request costs O(log n) however many holds are settling.
 */
export class MemoryHoldStore implements HoldStore {
  private readonly scopes = new Map<string, Scope>();
  private version = 0;

  /** The scope with every hold past its deadline dropped. */
  private active(name: string, now: number): Scope | undefined {
    const scope = this.scopes.get(name);
    if (!scope) return undefined;
    for (let e = scope.expiries.peek(); e && e.at <= now; e = scope.expiries.peek()) {
      scope.expiries.pop();
      const h = scope.holds.get(e.id);
      if (h && h.version === e.version) this.drop(scope, e.id, h);
    }
    if (scope.holds.size === 0) {
      this.scopes.delete(name);
      return undefined;
    }
    return scope;
  }

  private drop(scope: Scope, id: string, h: Hold): void {
    scope.holds.delete(id);
    scope.total -= h.amount;
  }

  /** After a hold left early: forget an empty scope, and rebuild a heap mostly made of stale entries. */
  private tidy(name: string, scope: Scope): void {
    if (scope.holds.size === 0) {
      this.scopes.delete(name);
      return;
    }
    if (scope.expiries.size > 2 * scope.holds.size + 64) {
      const fresh = new ExpiryHeap();
      for (const [id, h] of scope.holds) fresh.push({ at: h.until, id, version: h.version });
      scope.expiries = fresh;
    }
  }

  private put(scope: Scope, id: string, amount: Nano, until: number, settling: boolean): void {
    const old = scope.holds.get(id);
    if (old) this.drop(scope, id, old);
    const version = ++this.version;
    scope.holds.set(id, { amount, until, settling, version });
    scope.total += amount;
    scope.expiries.push({ at: until, id, version });
  }

  async acquire(scope: string, id: string, amount: Nano, limit: Nano | null, now: number, until: number): Promise<AcquireResult> {
    let s = this.active(scope, now);
    const held = s?.total ?? 0n;
    if (limit !== null && held + amount > limit) return { ok: false, held, holds: s ? views(s) : [] };
    if (!s) {
      s = { total: 0n, holds: new Map(), expiries: new ExpiryHeap() };
      this.scopes.set(scope, s);
    }
    this.put(s, id, amount, until, false);
    return { ok: true, held: held + amount };
  }

  async settle(scope: string, id: string, amount: Nano, until: number): Promise<void> {
    const s = this.scopes.get(scope);
    const h = s?.holds.get(id);
    if (!s || !h) return;
    if (amount <= 0n) this.drop(s, id, h);
    else this.put(s, id, amount, until, true);
    this.tidy(scope, s);
  }

  async renew(scope: string, id: string, now: number, until: number): Promise<boolean> {
    const s = this.active(scope, now);
    const h = s?.holds.get(id);
    if (!s || !h || h.settling) return false;
    this.put(s, id, h.amount, Math.max(h.until, until), false);
    return true;
  }

  async release(scope: string, id: string): Promise<void> {
    const s = this.scopes.get(scope);
    const h = s?.holds.get(id);
    if (s && h) {
      this.drop(s, id, h);
      this.tidy(scope, s);
    }
  }

  async held(scope: string, now: number): Promise<Nano> {
    return this.active(scope, now)?.total ?? 0n;
  }

  async list(scope: string, now: number): Promise<HoldView[]> {
    const s = this.active(scope, now);
    return s ? views(s) : [];
  }

  async close(): Promise<void> {
    this.scopes.clear();
  }
}

function views(s: Scope): HoldView[] {
  return [...s.holds.values()].map((h) => ({ amount: h.amount, until: h.until, settling: h.settling }));
}
