import type { Nano } from '../ledger/money.js';
import type { AcquireResult, HoldStore, HoldView } from './hold-store.js';

/** Holds in this process: one node's limits, exact, with no round trip. */
export class MemoryHoldStore implements HoldStore {
  private readonly scopes = new Map<string, Map<string, HoldView>>();

  private active(scope: string, now: number): Map<string, HoldView> | undefined {
    const holds = this.scopes.get(scope);
    if (!holds) return undefined;
    for (const [id, h] of holds) if (h.until <= now) holds.delete(id);
    if (holds.size === 0) {
      this.scopes.delete(scope);
      return undefined;
    }
    return holds;
  }

  private static sum(holds: Map<string, HoldView> | undefined): Nano {
    let total = 0n;
    if (holds) for (const h of holds.values()) total += h.amount;
    return total;
  }

  async acquire(scope: string, id: string, amount: Nano, limit: Nano | null, now: number, until: number): Promise<AcquireResult> {
    const holds = this.active(scope, now);
    const held = MemoryHoldStore.sum(holds);
    if (limit !== null && held + amount > limit) {
      return { ok: false, held, holds: holds ? [...holds.values()].map((h) => ({ ...h })) : [] };
    }
    let scopeHolds = holds;
    if (!scopeHolds) {
      scopeHolds = new Map();
      this.scopes.set(scope, scopeHolds);
    }
    scopeHolds.set(id, { amount, until, settling: false });
    return { ok: true, held: held + amount };
  }

  async settle(scope: string, id: string, amount: Nano, until: number): Promise<void> {
    const holds = this.scopes.get(scope);
    if (!holds?.has(id)) return;
    if (amount <= 0n) holds.delete(id);
    else holds.set(id, { amount, until, settling: true });
  }

  async release(scope: string, id: string): Promise<void> {
    this.scopes.get(scope)?.delete(id);
  }

  async held(scope: string, now: number): Promise<Nano> {
    return MemoryHoldStore.sum(this.active(scope, now));
  }

  async list(scope: string, now: number): Promise<HoldView[]> {
    const holds = this.active(scope, now);
    return holds ? [...holds.values()].map((h) => ({ ...h })) : [];
  }

  async close(): Promise<void> {
    this.scopes.clear();
  }
}
