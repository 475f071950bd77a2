interface Entry<Op> {
  op: Op;
  done: () => void;
}

/**
 * Operations queued per key (an account), written together: each key's operations, in the order they
 * were queued, go in one write (of at most `maxOps`), and every key's writes go at once (one round trip
 * once pipelined), instead of one round trip each.
 *
 * An urgent operation (one a request waits for, or one other processes must see soon: an admission,
 * a settlement) is written at the end of the
 * `gatherTurns`-th event-loop turn from now (1: this one), with everything queued by then: under load a
 * later turn's poll brings more requests, whose admissions then share the round trip (each costs this
 * process ~45 µs of CPU under the profiler, whatever it carries); with nothing else to do, the turns
 * after the first pass in microseconds. The others (one nobody waits for: a lease renewal, a ledger
 * commit's record) may wait up to `lazyMs` for the next urgent one to carry them, so that a turn that only
 * ends requests costs no round trip of its own.
 *
 * `write` must not reject: it handles its own failures (the operations' promises resolve either way).
 */
export class TurnBatches<Op> {
  private queued = new Map<string, Entry<Op>[]>();
  /** A write is due at the end of this turn. */
  private soon = false;
  /** A write is due within `lazyMs`. */
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (key: string, ops: Op[]) => Promise<void>,
    private readonly options: { maxOps?: number; lazyMs?: number; gatherTurns?: number } = {},
  ) {}

  /** Queues `op` for `key`; resolves once the write that carried it is over (written or failed). */
  add(key: string, op: Op, urgent: boolean): Promise<void> {
    return new Promise((done) => {
      let list = this.queued.get(key);
      if (!list) this.queued.set(key, (list = []));
      list.push({ op, done });
      if (urgent || !this.options.lazyMs) {
        if (!this.soon) {
          this.soon = true;
          this.gather(this.options.gatherTurns ?? 1);
        }
      } else this.timer ??= setTimeout(() => void this.flush(), this.options.lazyMs);
    });
  }

  /** Flushes at the end of the `turns`-th turn from now. */
  private gather(turns: number): void {
    setImmediate(() => {
      if (!this.soon) return; // written meanwhile (close)
      if (turns > 1) this.gather(turns - 1);
      else void this.flush();
    });
  }

  /** Writes everything queued so far (at the end of the turn; also on close). */
  async flush(): Promise<void> {
    this.soon = false;
    clearTimeout(this.timer);
    this.timer = undefined;
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
    const maxOps = this.options.maxOps ?? 200;
    for (let i = 0; i < list.length; i += maxOps) {
      const chunk = list.slice(i, i + maxOps);
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
