import type { Nano } from '../ledger/money.js';
import { ExpiryHeap } from './expiry-heap.js';
import type { HoldView } from './hold-store.js';
import { IdMap } from '../id-map.js';

/** A hold on a key's limit other than a request's first (an id admitted again for another key). */
interface OtherKeyHold {
  hash: string;
  amount: Nano;
  until: number;
}

/**
 * One request's running holds, each with its amount and its own lease end: against the in-flight
 * budget, the balance and its key's limit, each when it has one (`keyHash` undefined: none). An id
 * admitted again replaces the holds it is admitted for now, one by one, and keeps the others as they
 * were (as the Redis store does, scope by scope); one admitted again for another key holds on both
 * keys (`otherKeys`). The gateway admits a request once: the common case is one record, no array.
 */
interface Holds {
  /** Its entry in the heap: an entry of another version is stale. */
  version: number;
  budget: Nano | undefined;
  budgetUntil: number;
  balance: Nano | undefined;
  balanceUntil: number;
  keyHash: string | undefined;
  keyAmount: Nano;
  keyUntil: number;
  otherKeys: OtherKeyHold[] | undefined;
}

/** What one key's running holds come to, and how many there are (the key's entry goes with the last). */
interface KeyTotal {
  total: Nano;
  holds: number;
}

/**
 * An account's running holds (memory-hold-store.ts), kept by request: one record and one entry in a
 * heap of lease ends a request, where a map and a heap for each of the three scopes (the budget, the
 * balance, the key's limit) cost three records, three map entries and three heap entries a request
 * to hold and as many to let go. The totals of each scope are kept as they change; a record's heap
 * entry is at its earliest lease end, and when it comes, what ended goes and the rest gets an entry
 * at its own next end. A hold counts until the first look at or after its lease end (`lapse(now)`).
 */
export class RequestHolds {
  private readonly byId = new IdMap<Holds>();
  private expiries = new ExpiryHeap();
  private version = 0;
  /** The running holds on the in-flight budget, and on the balance, in all. */
  budgetHeld: Nano = 0n;
  balanceHeld: Nano = 0n;
  private readonly keys = new Map<string, KeyTotal>();

  /** Requests holding anything. */
  get size(): number {
    return this.byId.size;
  }

  /** What the running holds on key `hash`'s limit come to. */
  keyHeld(hash: string): Nano {
    return this.keys.get(hash)?.total ?? 0n;
  }

  /**
   * Request `id` holds, until `until`, `keyAmount` on key `keyHash`'s limit (when `keyHash` is given),
   * `balance` on the balance and `budget` on the in-flight budget (each when given), replacing a hold
   * of its own on the same scope.
   */
  hold(id: string, until: number, keyHash: string | undefined, keyAmount: Nano, balance: Nano | undefined, budget: Nano | undefined): void {
    if (keyHash === undefined && balance === undefined && budget === undefined) return;
    let h = this.byId.get(id);
    if (h === undefined) {
      h = { version: 0, budget, budgetUntil: until, balance, balanceUntil: until, keyHash, keyAmount, keyUntil: until, otherKeys: undefined };
      this.byId.set(id, h);
      if (budget !== undefined) this.budgetHeld += budget;
      if (balance !== undefined) this.balanceHeld += balance;
      if (keyHash !== undefined) this.addToKey(keyHash, keyAmount);
    } else {
      if (budget !== undefined) {
        this.budgetHeld += budget - (h.budget ?? 0n);
        h.budget = budget;
        h.budgetUntil = until;
      }
      if (balance !== undefined) {
        this.balanceHeld += balance - (h.balance ?? 0n);
        h.balance = balance;
        h.balanceUntil = until;
      }
      if (keyHash !== undefined) this.holdOnKey(h, keyHash, keyAmount, until);
    }
    this.schedule(id, h);
  }

  /**
   * Lets go of request `id`'s holds on the budget and the balance and on key `keyHash`'s limit (a hold
   * on another key, of an id admitted again for it, runs on to its lease end); answers whether it had
   * one on the budget.
   */
  release(id: string, keyHash: string): boolean {
    const h = this.byId.get(id);
    if (h === undefined) return false;
    const hadBudget = h.budget !== undefined;
    this.dropBudget(h);
    this.dropBalance(h);
    if (h.keyHash === keyHash) this.dropKey(h);
    else if (h.otherKeys !== undefined) this.dropOtherKeys(h, (k) => k.hash === keyHash);
    // What is left keeps its heap entry: its earliest end can only be later now.
    if (this.holdsNothing(h)) this.forget(id);
    return hadBudget;
  }

  /** Request `id`'s holds count until `until` at least. */
  renew(id: string, until: number): void {
    const h = this.byId.get(id);
    if (h === undefined) return;
    let renewed = false;
    if (h.budget !== undefined && h.budgetUntil < until) {
      h.budgetUntil = until;
      renewed = true;
    }
    if (h.balance !== undefined && h.balanceUntil < until) {
      h.balanceUntil = until;
      renewed = true;
    }
    if (h.keyHash !== undefined && h.keyUntil < until) {
      h.keyUntil = until;
      renewed = true;
    }
    if (h.otherKeys !== undefined) {
      for (const k of h.otherKeys) {
        if (k.until < until) {
          k.until = until;
          renewed = true;
        }
      }
    }
    if (renewed) this.schedule(id, h);
  }

  /** Drops the holds whose lease ended at or before `now`. */
  lapse(now: number): void {
    for (let e = this.expiries.peek(); e && e.at <= now; e = this.expiries.peek()) {
      this.expiries.pop();
      const h = this.byId.get(e.id);
      if (h === undefined || h.version !== e.version) continue;
      if (h.budget !== undefined && h.budgetUntil <= now) this.dropBudget(h);
      if (h.balance !== undefined && h.balanceUntil <= now) this.dropBalance(h);
      if (h.keyHash !== undefined && h.keyUntil <= now) this.dropKey(h);
      if (h.otherKeys !== undefined) this.dropOtherKeys(h, (k) => k.until <= now);
      if (this.holdsNothing(h)) this.forget(e.id);
      else this.schedule(e.id, h);
    }
  }

  /** The running holds on the in-flight budget, as a refusal lists them. */
  budgetHolds(): HoldView[] {
    const holds: HoldView[] = [];
    for (const h of this.byId.values()) if (h.budget !== undefined) holds.push({ amount: h.budget, until: h.budgetUntil, settling: false });
    return holds;
  }

  private holdOnKey(h: Holds, hash: string, amount: Nano, until: number): void {
    if (h.keyHash === hash) {
      this.addToKey(hash, amount - h.keyAmount, 0);
      h.keyAmount = amount;
      h.keyUntil = until;
      return;
    }
    const other = h.otherKeys?.find((k) => k.hash === hash);
    if (other !== undefined) {
      this.addToKey(hash, amount - other.amount, 0);
      other.amount = amount;
      other.until = until;
      return;
    }
    this.addToKey(hash, amount);
    if (h.keyHash === undefined) {
      h.keyHash = hash;
      h.keyAmount = amount;
      h.keyUntil = until;
    } else (h.otherKeys ??= []).push({ hash, amount, until });
  }

  private addToKey(hash: string, amount: Nano, holds = 1): void {
    let k = this.keys.get(hash);
    if (k === undefined) this.keys.set(hash, (k = { total: 0n, holds: 0 }));
    k.total += amount;
    k.holds += holds;
    if (k.holds === 0) this.keys.delete(hash);
  }

  private dropBudget(h: Holds): void {
    if (h.budget === undefined) return;
    this.budgetHeld -= h.budget;
    h.budget = undefined;
  }

  private dropBalance(h: Holds): void {
    if (h.balance === undefined) return;
    this.balanceHeld -= h.balance;
    h.balance = undefined;
  }

  private dropKey(h: Holds): void {
    if (h.keyHash === undefined) return;
    this.addToKey(h.keyHash, -h.keyAmount, -1);
    h.keyHash = undefined;
    h.keyAmount = 0n;
  }

  private dropOtherKeys(h: Holds, ended: (k: OtherKeyHold) => boolean): void {
    const left: OtherKeyHold[] = [];
    for (const k of h.otherKeys as OtherKeyHold[]) {
      if (ended(k)) this.addToKey(k.hash, -k.amount, -1);
      else left.push(k);
    }
    h.otherKeys = left.length > 0 ? left : undefined;
  }

  private holdsNothing(h: Holds): boolean {
    return h.budget === undefined && h.balance === undefined && h.keyHash === undefined && h.otherKeys === undefined;
  }

  /** A heap entry for the record at its earliest lease end (earlier entries of it go stale). */
  private schedule(id: string, h: Holds): void {
    h.version = ++this.version;
    this.expiries.push({ at: earliestEnd(h), id, version: h.version });
  }

  private forget(id: string): void {
    this.byId.delete(id);
    // Stale entries (of requests gone, or renewed) are dropped all at once when they outnumber the live ones.
    if (this.expiries.size > 2 * this.byId.size + 64) {
      const fresh = new ExpiryHeap();
      for (const [hid, h] of this.byId.entries()) fresh.push({ at: earliestEnd(h), id: hid, version: h.version });
      this.expiries = fresh;
    }
  }
}

/** When the first of a request's holds ends. */
function earliestEnd(h: Holds): number {
  let at = Infinity;
  if (h.budget !== undefined) at = h.budgetUntil;
  if (h.balance !== undefined && h.balanceUntil < at) at = h.balanceUntil;
  if (h.keyHash !== undefined && h.keyUntil < at) at = h.keyUntil;
  if (h.otherKeys !== undefined) for (const k of h.otherKeys) if (k.until < at) at = k.until;
  return at;
}
