import { IdTable, idHash } from './id-table.js';

/**
 * A map from ids to values, for ids that come and go all the time (one a request, kept while it runs
 * or until its charge is recorded) in an object that lives as long as the process: the same methods as
 * a Map's that such owners use, without the garbage a Map makes there.
 *
 * V8 rebuilds a Map's table, a new object of the table's size, whenever deletions and additions have
 * used up its slots (a small map every few changes), and a Map that has lived a while has its table in
 * the old generation, where V8 makes the new one too: 20–70 bytes of old-generation garbage a change,
 * which only a full collection reclaims (bench/README.md, thirty-seventh session). Here each entry sits
 * in a slot of two arrays that only grow, found through an IdTable (typed arrays, rebuilt only when the
 * map grows or shrinks by half or more), and a freed slot is taken again by the next entry. The arrays
 * stay when it empties: one request at a time (at low load) would otherwise make them anew each time,
 * 7 % more CPU a lone request (`lone-request.mjs`).
 *
 * Iteration goes by slot, not in the order the entries were added.
 */
export class IdMap<V> {
  /** Each slot's id (undefined: a free slot) and value. */
  private readonly ids: Array<string | undefined> = [];
  private readonly vals: Array<V | undefined> = [];
  /** Free slots, the last freed taken first. */
  private readonly free: number[] = [];
  private readonly table = new IdTable((slot) => this.ids[slot], true);

  get size(): number {
    return this.table.size;
  }

  get(id: string): V | undefined {
    const slot = this.table.find(id, idHash(id));
    return slot < 0 ? undefined : this.vals[slot];
  }

  has(id: string): boolean {
    return this.table.find(id, idHash(id)) >= 0;
  }

  set(id: string, value: V): this {
    const hash = idHash(id);
    const at = this.table.find(id, hash);
    if (at >= 0) {
      this.vals[at] = value;
      return this;
    }
    const slot = this.free.length > 0 ? (this.free.pop() as number) : this.ids.length;
    this.ids[slot] = id;
    this.vals[slot] = value;
    this.table.add(hash, slot);
    return this;
  }

  delete(id: string): boolean {
    const slot = this.table.remove(id, idHash(id));
    if (slot < 0) return false;
    this.ids[slot] = undefined;
    this.vals[slot] = undefined;
    this.free.push(slot);
    return true;
  }

  /** The values, slot by slot. */
  *values(): IterableIterator<V> {
    for (let i = 0; i < this.ids.length; i++) if (this.ids[i] !== undefined) yield this.vals[i] as V;
  }

  /** The ids and their values, slot by slot. */
  *entries(): IterableIterator<[string, V]> {
    for (let i = 0; i < this.ids.length; i++) {
      const id = this.ids[i];
      if (id !== undefined) yield [id, this.vals[i] as V];
    }
  }
}
