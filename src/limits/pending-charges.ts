import type { Nano } from '../ledger/money.js';
import { ExpiryHeap } from './expiry-heap.js';
import type { ChargePeriods } from './hold-store.js';
import type { PendingCharge } from './money-view.js';
import { IdMap } from '../id-map.js';

/**
 * What is pending for one key in one day (and so in one week and one month): the charges of a key
 * mostly fall in one such bucket, two across a midnight. A charge adds to one bucket where it added
 * to four sums (all time, its day, week and month), each a map lookup and two BigInt sums.
 */
interface Bucket {
  keyHash: string;
  periods: ChargePeriods;
  usage: Nano;
  byokUsage: Nano;
  count: number;
}

interface Entry {
  charge: PendingCharge;
  until: number;
  version: number;
  bucket: Bucket;
}

/** What is pending for one key in one period. */
export interface PendingUsage {
  usage: Nano;
  byokUsage: Nano;
}

const NONE: PendingUsage = { usage: 0n, byokUsage: 0n };

const samePeriods = (a: ChargePeriods, b: ChargePeriods): boolean => a === b || (a.daily === b.daily && a.weekly === b.weekly && a.monthly === b.monthly);

/** Whether a charge of `periods` counts in `period` ('all', or a `d:`, `w:` or `m:` period). */
const countsIn = (periods: ChargePeriods, period: string): boolean =>
  period === 'all' || periods.daily === period || periods.weekly === period || periods.monthly === period;

/**
 * An account's pending charges (requests ended, their charges not yet recorded by a ledger commit),
 * with their sums kept as they change: what the balance and each key's usage per period owe them is
 * read in O(1) however many are pending (a SQLite ledger applies its journal in bulk, so hundreds may
 * be pending under load; summing them at each admission cost more than the admission). Each lapses at
 * the end of its lease unless renewed, found in O(log n) (a heap of lease ends).
 */
export class PendingCharges {
  private readonly entries = new IdMap<Entry>();
  private expiries = new ExpiryHeap();
  /** Each key's buckets (one a day with charges pending). */
  private readonly byKey = new Map<string, Bucket[]>();
  /** The bucket the last charge went to: the next one nearly always goes there too. */
  private lastBucket: Bucket | undefined;
  private version = 0;
  /** The pending charges' total cost. */
  cost: Nano = 0n;

  get size(): number {
    return this.entries.size;
  }

  /** Pending until `until` (replacing a charge pending under the same id). */
  set(id: string, charge: PendingCharge, until: number): void {
    this.delete(id);
    const version = ++this.version;
    const bucket = this.bucketOf(charge);
    this.entries.set(id, { charge, until, version, bucket });
    this.expiries.push({ at: until, id, version });
    this.cost += charge.cost;
    bucket.usage += charge.cost;
    bucket.byokUsage += charge.byokUsage;
    bucket.count += 1;
  }

  /** Recorded (or lapsed): no longer pending. */
  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    const { charge, bucket } = e;
    this.cost -= charge.cost;
    bucket.usage -= charge.cost;
    bucket.byokUsage -= charge.byokUsage;
    // Nothing pending in it any more: the bucket goes (those of every key and day would pile up).
    if (--bucket.count === 0) this.forget(bucket);
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

  /** What is pending for the key `hash` in `period` ('all', or a `d:`, `w:` or `m:` period). */
  keyUsage(hash: string, period: string): PendingUsage {
    const buckets = this.byKey.get(hash);
    if (buckets === undefined) return NONE;
    let usage = 0n;
    let byokUsage = 0n;
    let any = false;
    for (const b of buckets) {
      if (!countsIn(b.periods, period)) continue;
      usage += b.usage;
      byokUsage += b.byokUsage;
      any = true;
    }
    return any ? { usage, byokUsage } : NONE;
  }

  /** The bucket of the charge's key and day, made when it has none. */
  private bucketOf(charge: PendingCharge): Bucket {
    const last = this.lastBucket;
    // A bucket that emptied is gone from byKey (its count is 0): it is not reused.
    if (last !== undefined && last.count > 0 && last.keyHash === charge.keyHash && samePeriods(last.periods, charge.periods)) return last;
    let buckets = this.byKey.get(charge.keyHash);
    let bucket = buckets?.find((b) => samePeriods(b.periods, charge.periods));
    if (bucket === undefined) {
      bucket = { keyHash: charge.keyHash, periods: charge.periods, usage: 0n, byokUsage: 0n, count: 0 };
      if (buckets === undefined) this.byKey.set(charge.keyHash, (buckets = []));
      buckets.push(bucket);
    }
    this.lastBucket = bucket;
    return bucket;
  }

  private forget(bucket: Bucket): void {
    const buckets = this.byKey.get(bucket.keyHash);
    if (buckets === undefined) return;
    const left = buckets.filter((b) => b !== bucket);
    if (left.length > 0) this.byKey.set(bucket.keyHash, left);
    else this.byKey.delete(bucket.keyHash);
  }

  private compact(): void {
    const fresh = new ExpiryHeap();
    for (const [id, e] of this.entries.entries()) fresh.push({ at: e.until, id, version: e.version });
    this.expiries = fresh;
  }
}
