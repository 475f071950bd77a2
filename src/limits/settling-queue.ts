import type { Nano } from '../ledger/money.js';

interface Settling {
  id: string;
  amount: Nano;
  until: number;
  /** False once the entry was taken out by id (it stays in the queue until its turn, counting nothing). */
  live: boolean;
}

/**
 * The ended requests' actual costs in an account's in-flight budget, each until its settlement window
 * closes, kept in the order they close, and by request id. Every one is added `now + window` after the
 * last, so it goes at the end and the queue expires from its head: O(1) a request, where a heap of
 * deadlines cost O(log n) (at 1,000 requests a second and a 60 s window, 60,000 entries). One that
 * closes earlier than the last (the clock stepped back, or the window was shortened) is put in its
 * place from the end, so each still counts exactly until its own time.
 */
export class SettlingQueue {
  private items: Settling[] = [];
  private head = 0;
  private sum: Nano = 0n;
  private readonly byId = new Map<string, Settling>();

  /** What the entries not yet expired add up to. */
  get total(): Nano {
    return this.sum;
  }

  /** How many entries count. */
  get size(): number {
    return this.byId.size;
  }

  /** Adds request `id`'s actual cost until `until`, in place of any it had. */
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

  /** Takes request `id`'s entry out; whether it had one that still counted. */
  take(id: string): boolean {
    const entry = this.byId.get(id);
    if (!entry) return false;
    this.byId.delete(id);
    entry.live = false;
    this.sum -= entry.amount;
    return true;
  }

  /** Drops the entries whose window closed at or before `now`. */
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

  /** The entries that count, first to close first. */
  *entries(): IterableIterator<{ amount: Nano; until: number }> {
    for (let i = this.head; i < this.items.length; i++) {
      const entry = this.items[i] as Settling;
      if (entry.live) yield { amount: entry.amount, until: entry.until };
    }
  }
}
