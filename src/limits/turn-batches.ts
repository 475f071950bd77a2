interface Entry<Op> {
  op: Op;
  done: () => void;
}

/**
 * Operations queued per key (an account) during one event-loop turn, written together when the turn
 * ends: each key's operations, in the order they were queued, go in one write (of at most `maxOps`),
 * instead of one round trip each. The requests that end in one turn settle in one call, as the
 * ledger's group commit charges them in one transaction.
 *
 * `write` must not reject: it handles its own failures (the operations' promises resolve either way).
 */
export class TurnBatches<Op> {
  private queued = new Map<string, Entry<Op>[]>();
  private scheduled = false;

  constructor(
    private readonly write: (key: string, ops: Op[]) => Promise<void>,
    private readonly maxOps = 200,
  ) {}

  /** Queues `op` for `key`; resolves once the write that carried it is over (written or failed). */
  add(key: string, op: Op): Promise<void> {
    return new Promise((done) => {
      let list = this.queued.get(key);
      if (!list) this.queued.set(key, (list = []));
      list.push({ op, done });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Writes everything queued so far (at the end of the turn; also on close). */
  async flush(): Promise<void> {
    this.scheduled = false;
    const queued = this.queued;
    this.queued = new Map();
    await Promise.all([...queued].map(([key, list]) => this.writeAll(key, list)));
  }

  /**
   * Writes what is queued for `key` now, before the turn ends: a caller about to read what these
   * writes change sends its read after this (one connection keeps the order) and sees them.
   */
  flushKey(key: string): Promise<void> {
    const list = this.queued.get(key);
    if (!list) return Promise.resolve();
    this.queued.delete(key);
    return this.writeAll(key, list);
  }

  private async writeAll(key: string, list: Array<Entry<Op>>): Promise<void> {
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < list.length; i += this.maxOps) {
      const chunk = list.slice(i, i + this.maxOps);
      const ops = chunk.map((e) => e.op);
      writes.push(
        this.write(key, ops)
          .catch(() => undefined)
          .then(() => chunk.forEach((e) => e.done())),
      );
    }
    await Promise.all(writes);
  }
}
