import type { Nano } from '../ledger/money.js';
import { IdTable, idHash } from '../id-table.js';

/** What one BigInt64Array slot holds: the amounts up to it go in the compact run. */
const MAX_COMPACT = 2n ** 63n - 1n;
/**
 * The run's smallest capacity once it holds anything (a power of two). Every account the limits store
 * knows has a queue (up to 100,000 of them), most of them holding a few entries or none: an empty
 * queue holds no arrays at all.
 */
const MIN_CAPACITY = 8;

// What an empty run holds, shared: nothing is written to a run before it grows.
const NO_HASHES = new Int32Array(0);
const NO_UNTILS = new Float64Array(0);
const NO_AMOUNTS = new BigInt64Array(0);

/**
 * The ended requests' actual costs in an account's in-flight budget, each until its settlement window
 * closes, kept in the order they close, and by request id. Every one is added `now + window` after the
 * last, so it goes at the end and the queue expires from its head: O(1) a request, where a heap of
 * deadlines cost O(log n) (at 1,000 requests a second and a 60 s window, 60,000 entries).
 *
 * Those entries live for the whole window, long enough for V8 to move them to its old generation,
 * where only a full collection reclaims them: they were most of what a SQLite gateway promoted (~190
 * bytes an entry as objects, and a Map by id that, used as a queue, rebuilt its table every few
 * thousand requests). So the entries added in order are a ring of typed arrays (their numbers off V8's
 * heap), found by id through a hash table of typed arrays (id-table.ts): an entry costs its id.
 * One that closes earlier than the last (the clock stepped back, or the window was shortened), or whose
 * amount does not fit in 64 bits, goes to a sorted list of objects (`SortedSettling`) instead, so each
 * still counts exactly until its own time.
 */
export class SettlingQueue {
  // The run: entry number `n` (counted from the first ever added) sits at `n & mask`; those from `first`
  // to `next` are in the ring, in the order they close. A taken entry stays until its turn, its id cleared.
  // Empty (capacity 0, mask -1) until the first entry, and again whenever the run is.
  private ids: Array<string | undefined> = [];
  private hashes = NO_HASHES;
  private untils = NO_UNTILS;
  private amounts = NO_AMOUNTS;
  private mask = -1;
  private first = 0;
  private next = 0;
  /** The run's entries that count, by request id: their entry numbers. */
  private readonly numbers = new IdTable((n) => this.ids[n & this.mask]);
  private sum: Nano = 0n;
  /** The entries that could not go at the run's end (made for the first of them). */
  private others: SortedSettling | undefined;

  /** What the entries not yet expired add up to. */
  get total(): Nano {
    return this.others ? this.sum + this.others.total : this.sum;
  }

  /** How many entries count. */
  get size(): number {
    return this.numbers.size + (this.others?.size ?? 0);
  }

  /** Adds request `id`'s actual cost until `until`, in place of any it had. */
  add(id: string, amount: Nano, until: number): void {
    const hash = idHash(id);
    this.takeHashed(id, hash);
    const last = this.next - 1;
    if ((this.next > this.first && (this.untils[last & this.mask] as number) > until) || amount > MAX_COMPACT || amount < -MAX_COMPACT) {
      (this.others ??= new SortedSettling()).add(id, amount, until);
      return;
    }
    if (this.next - this.first > this.mask) this.resize(Math.max(MIN_CAPACITY, (this.mask + 1) * 2));
    const slot = this.next & this.mask;
    this.ids[slot] = id;
    this.hashes[slot] = hash;
    this.untils[slot] = until;
    this.amounts[slot] = amount;
    this.numbers.add(hash, this.next++);
    this.sum += amount;
  }

  /** Takes request `id`'s entry out; whether it had one that still counted. */
  take(id: string): boolean {
    return this.takeHashed(id, idHash(id));
  }

  private takeHashed(id: string, hash: number): boolean {
    const n = this.numbers.remove(id, hash);
    if (n < 0) return this.others?.take(id) ?? false;
    const slot = n & this.mask;
    this.ids[slot] = undefined;
    this.sum -= this.amounts[slot] as bigint;
    return true;
  }

  /** Drops the entries whose window closed at or before `now`. */
  expire(now: number): void {
    const { ids, hashes, untils, amounts, mask } = this;
    while (this.first < this.next) {
      const slot = this.first & mask;
      if ((untils[slot] as number) > now) break;
      const id = ids[slot];
      if (id !== undefined) {
        this.numbers.remove(id, hashes[slot] as number);
        this.sum -= amounts[slot] as bigint;
        ids[slot] = undefined;
      }
      this.first++;
    }
    // An empty run gives its arrays back; one that a burst grew, once a quarter of it or less is taken
    // (to twice what it holds).
    const held = this.next - this.first;
    if (held === 0 && this.mask >= 0) this.resize(0);
    else if (this.mask + 1 > MIN_CAPACITY && held * 4 <= this.mask + 1) {
      let capacity = MIN_CAPACITY;
      while (capacity < held * 2) capacity *= 2;
      this.resize(capacity);
    }
    this.others?.expire(now);
  }

  /** The entries that count, first to close first. */
  *entries(): IterableIterator<{ amount: Nano; until: number }> {
    const others = this.others?.entries() ?? [].values();
    let other = others.next();
    for (let n = this.first; n < this.next; n++) {
      const slot = n & this.mask;
      if (this.ids[slot] === undefined) continue;
      const until = this.untils[slot] as number;
      for (; !other.done && other.value.until <= until; other = others.next()) yield other.value;
      yield { amount: this.amounts[slot] as bigint, until };
    }
    for (; !other.done; other = others.next()) yield other.value;
  }

  /** The ring at `capacity` (0, or a power of two at least what it holds), each entry at its number's slot. */
  private resize(capacity: number): void {
    const ids = new Array<string | undefined>(capacity).fill(undefined);
    const hashes = capacity === 0 ? NO_HASHES : new Int32Array(capacity);
    const untils = capacity === 0 ? NO_UNTILS : new Float64Array(capacity);
    const amounts = capacity === 0 ? NO_AMOUNTS : new BigInt64Array(capacity);
    const mask = capacity - 1;
    for (let n = this.first; n < this.next; n++) {
      const from = n & this.mask;
      const to = n & mask;
      ids[to] = this.ids[from];
      hashes[to] = this.hashes[from] as number;
      untils[to] = this.untils[from] as number;
      amounts[to] = this.amounts[from] as bigint;
    }
    this.ids = ids;
    this.hashes = hashes;
    this.untils = untils;
    this.amounts = amounts;
    this.mask = mask;
  }
}

interface Settling {
  id: string;
  amount: Nano;
  until: number;
  /** False once the entry was taken out by id (it stays in the list until its turn, counting nothing). */
  live: boolean;
}

/**
 * Entries as objects, kept sorted by when they close: each put in its place from the end, so that those
 * added in order still cost O(1). SettlingQueue's place for the entries its run cannot take.
 */
class SortedSettling {
  private items: Settling[] = [];
  private head = 0;
  private sum: Nano = 0n;
  private readonly byId = new Map<string, Settling>();

  get total(): Nano {
    return this.sum;
  }

  get size(): number {
    return this.byId.size;
  }

  add(id: string, amount: Nano, until: number): void {
    this.take(id);
    const entry: Settling = { id, amount, until, live: true };
    const a = this.items;
    let i = a.length;
    while (i > this.head && (a[i - 1] as Settling).until > until) i--;
    if (i === a.length) a.push(entry);
    else a.splice(i, 0, entry);
    this.byId.set(id, entry);
    this.sum += amount;
  }

  take(id: string): boolean {
    const entry = this.byId.get(id);
    if (!entry) return false;
    this.byId.delete(id);
    entry.live = false;
    this.sum -= entry.amount;
    return true;
  }

  expire(now: number): void {
    const a = this.items;
    while (this.head < a.length && (a[this.head] as Settling).until <= now) {
      const entry = a[this.head] as Settling;
      if (entry.live) {
        this.byId.delete(entry.id);
        this.sum -= entry.amount;
      }
      this.head++;
    }
    if (this.head === a.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > a.length) {
      this.items = a.slice(this.head);
      this.head = 0;
    }
  }

  *entries(): IterableIterator<{ amount: Nano; until: number }> {
    for (let i = this.head; i < this.items.length; i++) {
      const entry = this.items[i] as Settling;
      if (entry.live) yield { amount: entry.amount, until: entry.until };
    }
  }
}
