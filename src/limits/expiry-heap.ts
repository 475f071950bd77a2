/** A min-heap of (time, id, version) entries: what expires next, in O(log n). */
export interface Expiry {
  at: number;
  id: string;
  version: number;
}

export class ExpiryHeap {
  private readonly items: Expiry[] = [];

  get size(): number {
    return this.items.length;
  }

  push(e: Expiry): void {
    const a = this.items;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((a[parent] as Expiry).at <= e.at) break;
      a[i] = a[parent] as Expiry;
      i = parent;
    }
    a[i] = e;
  }

  peek(): Expiry | undefined {
    return this.items[0];
  }

  pop(): Expiry | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    // Sift `last` down from the root.
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let child = -1;
      if (l < a.length) child = l;
      if (r < a.length && (a[r] as Expiry).at < (a[l] as Expiry).at) child = r;
      if (child < 0 || (a[child] as Expiry).at >= last.at) break;
      a[i] = a[child] as Expiry;
      i = child;
    }
    a[i] = last;
    return top;
  }
}
