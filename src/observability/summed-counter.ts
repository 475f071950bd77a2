import { Counter, type Registry } from 'prom-client';
import { SeriesTable } from './series-table.js';

interface Cell<V> {
  labels: readonly string[];
  pending: V;
}

/**
 * A Prometheus counter whose increments are summed here, by their label values, and handed to
 * prom-client when the registry is scraped: prom-client's `labels(…).inc()` builds, validates and
 * hashes a label object on every call, which the chat route would pay several times a request.
 * `V` is what is summed (a number, or exact nanocredits as a bigint) and `toValue` turns a sum into
 * the counter's value at scrape time.
 */
export class SummedCounter<V extends number | bigint> {
  private readonly cells: SeriesTable<Cell<V>>;

  constructor(options: { name: string; help: string; labelNames: readonly string[]; registry: Registry }, zero: V, toValue: (sum: V) => number) {
    const cells = new SeriesTable<Cell<V>>((labels) => ({ labels, pending: zero }));
    this.cells = cells;
    new Counter({
      name: options.name,
      help: options.help,
      labelNames: options.labelNames,
      registers: [options.registry],
      collect() {
        for (const cell of cells.values()) {
          if (cell.pending === zero) continue;
          this.labels(...cell.labels).inc(toValue(cell.pending));
          cell.pending = zero;
        }
      },
    });
  }

  /** Adds `by` to the series of these label values (in the order of `labelNames`). */
  add(by: V, ...labels: string[]): void {
    const cell = this.cells.of(labels);
    cell.pending = (typeof by === 'bigint' ? (cell.pending as bigint) + by : (cell.pending as number) + (by as number)) as V;
  }
}
