import type { Nano } from '../ledger/money.js';
import { keyPeriodName } from '../ledger/periods.js';
import { ExpiryHeap } from './expiry-heap.js';
import type { PendingCharge } from './money-view.js';

interface Entry {
  charge: PendingCharge;
  until: number;
  version: number;
  /** Its `hash\u0000period` keys ('all', day, week, month), made once. */
  keys: string[];
}

/** What is pending for one key in one period. */
export interface PendingUsage {
  usage: Nano;
  byokUsage: Nano;
}

const NONE: PendingUsage = { usage: 0n, byokUsage: 0n };

/**
 * An account's pending charges (requests ended, their charges not yet recorded by a ledger commit),
 * with their sums kept as they change: what the balance and each key's usage per period owe them is
 * read in O(1) however many are pending (a SQLite ledger applies its journal in bulk, so hundreds may
 * be pending under load; summing them at each admission cost more than the admission). Each lapses at
 * the end of its lease unless renewed, found in O(log n) (a heap of lease ends).
 */
export class PendingCharges {
  private readonly entries = new Map<string, Entry>();
  private expiries = new ExpiryHeap();
  /** By `hash\u0000period`, for the periods 'all' and each charge's day, week and month. */
  private readonly byKeyPeriod = new Map<string, PendingUsage & { count: number }>();
  private version = 0;
  /** The pending charges' total cost. */
  cost: Nano = 0n;
  private lastKeys: { hash: string; periods: PendingCharge['periods']; keys: string[] } | undefined;

  get size(): number {
    return this.entries.size;
  }

  /** Pending until `until` (replacing a charge pending under the same id). */
  set(id: string, charge: PendingCharge, until: number): void {
    this.delete(id);
    const version = ++this.version;
    const keys = this.keysOf(charge);
    this.entries.set(id, { charge, until, version, keys });
    this.expiries.push({ at: until, id, version });
    this.add(charge, keys, true);
  }

  /** Recorded (or lapsed): no longer pending. */
  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    this.add(e.charge, e.keys, false);
    if (this.expiries.size > 2 * this.entries.size + 64) this.compact();
    return true;
  }

  /** Renewed: pending until `until` at least. */
  extend(id: string, until: number): void {
    const e = this.entries.get(id);
    if (!e || e.until >= until) return;
    e.until = until;
    e.version = ++this.version;
    this.expiries.push({ at: until, id, version: e.version });
  }

  /** Drops the charges whose lease ended by `now`; true when any did. */
  expire(now: number): boolean {
    let any = false;
    for (let x = this.expiries.peek(); x && x.at <= now; x = this.expiries.peek()) {
      this.expiries.pop();
      const e = this.entries.get(x.id);
      if (e && e.version === x.version) {
        this.delete(x.id);
        any = true;
      }
    }
    return any;
  }

  /**
   * A charge's `hash\u0000period` keys: those of the charge before when it is of the same key and day
   * (`periodKeys` answers one object a day), as it nearly always is; made anew otherwise.
   */
  private keysOf(charge: PendingCharge): string[] {
    const last = this.lastKeys;
    if (last && last.hash === charge.keyHash && last.periods === charge.periods) return last.keys;
    const p = charge.periods;
    const keys = ['all', p.daily, p.weekly, p.monthly].map((period) => keyPeriodName(charge.keyHash, period));
    this.lastKeys = { hash: charge.keyHash, periods: p, keys };
    return keys;
  }

  /** What is pending for the key `hash` in `period` ('all', or a `d:`, `w:` or `m:` period). */
  keyUsage(hash: string, period: string): PendingUsage {
    const u = this.byKeyPeriod.get(keyPeriodName(hash, period));
    return u ? { usage: u.usage, byokUsage: u.byokUsage } : NONE;
  }

  /** Adds the charge to the sums (`adding`), or takes it out of them. No `sign * amount`: each BigInt product is one more allocation. */
  private add(c: PendingCharge, keys: readonly string[], adding: boolean): void {
    this.cost = adding ? this.cost + c.cost : this.cost - c.cost;
    for (const k of keys) {
      let u = this.byKeyPeriod.get(k);
      if (!u) this.byKeyPeriod.set(k, (u = { usage: 0n, byokUsage: 0n, count: 0 }));
      if (adding) {
        u.usage += c.cost;
        u.byokUsage += c.byokUsage;
        u.count += 1;
      } else {
        u.usage -= c.cost;
        u.byokUsage -= c.byokUsage;
        u.count -= 1;
      }
      // Nothing pending for it any more: the entry goes (those of every key and period would pile up).
      if (u.count === 0) this.byKeyPeriod.delete(k);
    }
  }

  private compact(): void {
    const fresh = new ExpiryHeap();
    for (const [id, e] of this.entries) fresh.push({ at: e.until, id, version: e.version });
    this.expiries = fresh;
  }
}
