import { IdTable, idHash } from './id-table.js';

/** Slots an IdMap searches one by one before it builds a hash table of them. */
const SMALL = 16;

/**
 * A map from ids to values, for ids that come and go all the time (one a request, kept while it runs
 * or until its charge is recorded) in an object that lives as long as the process: the same methods as
 * a Map's that such owners use, without the garbage a Map makes there.
 *
 * V8 rebuilds a Map's table, a new object of the table's size, whenever deletions and additions have
 * used up its slots (a small map every few changes), and a Map that has lived a while has its table in
 * the old generation, where V8 makes the new one too: 20–75 bytes of old-generation garbage a `set`
 * and `delete` (two micro-benchmarks), which only a full collection reclaims; and the stale tables keep
 * the young objects they point at alive until then (bench/README.md, thirty-seventh session).
 *
 * Here each entry sits in a slot of two arrays; a freed slot is taken again by the next entry, so under
 * load, where the map never empties, the arrays stay as they are. Up to SMALL slots are searched one by
 * one; past that an IdTable (typed arrays) finds them, made once and then rebuilt only when the map
 * grows, or falls to an eighth of its capacity. Once it is empty the map holds nothing: every account
 * of the in-process hold store has two of these (up to 100,000 accounts), and an idle one costs what an
 * empty Map does. At one request at a time nothing but young arrays of a few slots is made; typed
 * arrays made anew for each lone request cost it 7 % more CPU (`lone-request.mjs`).
 *
 * Iteration goes by slot, not in the order the entries were added.
 */
export class IdMap<V> {
  /** Each slot's id (undefined: a free slot) and value. */
  private readonly ids: Array<string | undefined> = [];
  private readonly vals: Array<V | undefined> = [];
  /** Free slots, the last freed taken first. */
  private readonly free: number[] = [];
  private count = 0;
  /** The slots by id, once more than SMALL slots were in use (until the map empties). */
  private table: IdTable | undefined = undefined;

  get size(): number {
    return this.count;
  }

  /** The slot of `id` (whose idHash is `hash` when there is a table), or -1. */
  private slotOf(id: string, hash = this.table !== undefined ? idHash(id) : 0): number {
    if (this.table !== undefined) return this.table.find(id, hash);
    const ids = this.ids;
    for (let i = 0; i < ids.length; i++) if (ids[i] === id) return i;
    return -1;
  }

  get(id: string): V | undefined {
    const slot = this.slotOf(id);
    return slot < 0 ? undefined : this.vals[slot];
  }

  has(id: string): boolean {
    return this.slotOf(id) >= 0;
  }

  set(id: string, value: V): this {
    // Hashed once, for the search and the addition both.
    const hash = this.table !== undefined ? idHash(id) : 0;
    const at = this.slotOf(id, hash);
    if (at >= 0) {
      this.vals[at] = value;
      return this;
    }
    const slot = this.free.length > 0 ? (this.free.pop() as number) : this.ids.length;
    this.ids[slot] = id;
    this.vals[slot] = value;
    this.count++;
    if (this.table !== undefined) this.table.add(hash, slot);
    else if (this.ids.length > SMALL) {
      const ids = this.ids;
      const table = new IdTable((s) => ids[s]);
      for (let s = 0; s < ids.length; s++) {
        const key = ids[s];
        if (key !== undefined) table.add(idHash(key), s);
      }
      this.table = table;
    }
    return this;
  }

  delete(id: string): boolean {
    const slot = this.table !== undefined ? this.table.remove(id, idHash(id)) : this.slotOf(id);
    if (slot < 0) return false;
    this.ids[slot] = undefined;
    this.vals[slot] = undefined;
    if (--this.count === 0) {
      // Empty: nothing kept (an array cut to no length gives its storage back). The arrays themselves
      // stay: made anew, V8 soon made them in the old generation (allocation-site pretenuring), whence
      // each emptying left them behind as old-generation garbage.
      this.ids.length = 0;
      this.vals.length = 0;
      this.free.length = 0;
      this.table = undefined;
    } else this.free.push(slot);
    return true;
  }

  /** The values, slot by slot. */
  *values(): IterableIterator<V> {
    const { ids, vals } = this;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== undefined) yield vals[i] as V;
  }

  /** The ids and their values, slot by slot. */
  *entries(): IterableIterator<[string, V]> {
    const { ids, vals } = this;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (id !== undefined) yield [id, vals[i] as V];
    }
  }
}
