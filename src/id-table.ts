/**
 * The table's smallest capacity once it holds anything (a power of two). SettlingQueue makes one for
 * every account it holds: an empty table holds no arrays.
 */
const MIN_CAPACITY = 16;

// What an empty table holds, shared: nothing is written to a table before it grows.
const NO_HASHES = new Int32Array(0);
const NO_VALUES = new Float64Array(0);

/**
 * The characters of an id that are hashed, from its end: a generation id ends with its 80 random bits
 * (14 characters: generation-id.ts), and what comes before them, the time, it shares with the
 * requests around it. Two ids that end alike only share a slot's neighbourhood (the table compares
 * the ids themselves); hashing the 32 characters of every id cost ~1,300 instructions a request.
 */
const HASHED = 16;

/**
 * The 32-bit FNV-1a hash of an id's last HASHED characters (of a shorter one, all of it), never 0 (0
 * marks an empty slot). Request ids are ASCII; any string hashes (a char above 0xff is folded in
 * whole), it only spreads less.
 */
export function idHash(id: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = id.length > HASHED ? id.length - HASHED : 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h === 0 ? 1 : h;
}

/**
 * Request ids to numbers, in typed arrays: an open-addressing hash table (linear probing, entries
 * shifted back on removal, so there are no tombstones), whose keys are not kept here but read through
 * `keyOf` (the owner keeps each id beside its number). A JavaScript Map used as a queue (ids added at
 * one end and deleted at the other, as a settlement window's are) rebuilds its table every few
 * thousand deletions, each a new object of the table's size: with a window of tens of thousands of
 * requests, ~60–100 bytes of old-generation garbage a request. This table allocates only when it
 * grows or shrinks.
 */
export class IdTable {
  private hashes = NO_HASHES;
  private values = NO_VALUES;
  private mask = -1;
  private count = 0;

  /** `keyOf(value)`: the id stored with `value`. */
  constructor(private readonly keyOf: (value: number) => string | undefined) {}

  get size(): number {
    return this.count;
  }

  /** Adds an id (not in the table; `hash` is idHash(id), `value` ≥ 0, and keyOf(value) the id). */
  add(hash: number, value: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.resize(Math.max(MIN_CAPACITY, (this.mask + 1) * 2));
    this.place(hash, value);
    this.count++;
  }

  /** The value stored with `id` (whose hash is `hash`, idHash(id)), or -1 when it is not there. */
  find(id: string, hash: number): number {
    if (this.count === 0) return -1;
    const { hashes, values, mask } = this;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const h = hashes[i] as number;
      if (h === 0) return -1;
      if (h === hash && this.keyOf(values[i] as number) === id) return values[i] as number;
    }
  }

  /** Removes `id` (whose hash is `hash`, idHash(id)): its value, or -1 when it was not there. */
  remove(id: string, hash: number): number {
    if (this.count === 0) return -1;
    const { hashes, values, mask } = this;
    let i = hash & mask;
    for (; ; i = (i + 1) & mask) {
      const h = hashes[i] as number;
      if (h === 0) return -1;
      if (h === hash && this.keyOf(values[i] as number) === id) break;
    }
    const value = values[i] as number;
    // Backward shift: each entry after the hole that may move into it (its home is not between the
    // hole and itself, cyclically) does, and the hole moves on to where it was.
    for (let j = (i + 1) & mask; hashes[j] !== 0; j = (j + 1) & mask) {
      const home = (hashes[j] as number) & mask;
      const stays = i <= j ? i < home && home <= j : i < home || home <= j;
      if (stays) continue;
      hashes[i] = hashes[j] as number;
      values[i] = values[j] as number;
      i = j;
    }
    hashes[i] = 0;
    this.count--;
    // An empty table gives its arrays back; one a burst grew is halved once an eighth of it or less is taken.
    if (this.count === 0) this.resize(0);
    else if (this.mask + 1 > MIN_CAPACITY && this.count * 8 <= this.mask + 1) this.resize((this.mask + 1) / 2);
    return value;
  }

  private place(hash: number, value: number): void {
    const { hashes, mask } = this;
    let i = hash & mask;
    while (hashes[i] !== 0) i = (i + 1) & mask;
    hashes[i] = hash;
    this.values[i] = value;
  }

  private resize(capacity: number): void {
    const { hashes, values } = this;
    this.hashes = capacity === 0 ? NO_HASHES : new Int32Array(capacity);
    this.values = capacity === 0 ? NO_VALUES : new Float64Array(capacity);
    this.mask = capacity - 1;
    for (let i = 0; i < hashes.length; i++) if (hashes[i] !== 0) this.place(hashes[i] as number, values[i] as number);
  }
}
