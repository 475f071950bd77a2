import { Counter, type Registry } from 'prom-client';
import { SeriesTable } from './series-table.js';

interface Cell<V> {
  labels: readonly string[];
  total: V;
}

/**
 * A Prometheus counter whose increments are summed here, by their label values, and handed to
 * prom-client when the registry is scraped: prom-client's `labels(…).inc()` builds, validates and
 * hashes a label object on every call, which the chat route would pay several times a request.
 * `V` is what is summed (a number, or exact nanocredits as a bigint) and `toValue` turns a sum into
 * the counter's value at scrape time. Each series' whole sum is kept here and the counter set to it at
 * every scrape, so that a scraped value is the exact sum rounded once, never the sum of every
 * scrape's rounded part (which drifts from the ledger over many scrapes).
 */
export class SummedCounter<V extends number | bigint> {
  private readonly cells: SeriesTable<Cell<V>>;

  constructor(options: { name: string; help: string; labelNames: readonly string[]; registry: Registry }, zero: V, toValue: (sum: V) => number) {
    const cells = new SeriesTable<Cell<V>>((labels) => ({ labels, total: zero }));
    this.cells = cells;
    new Counter({
      name: options.name,
      help: options.help,
      labelNames: options.labelNames,
      registers: [options.registry],
      collect() {
        this.reset();
        for (const cell of cells.values()) this.labels(...cell.labels).inc(toValue(cell.total));
      },
    });
  }

  /** Adds `by` to the series of these label values (in the order of `labelNames`). */
  add(by: V, ...labels: string[]): void {
    const cell = this.cells.of(labels);
    cell.total = (typeof by === 'bigint' ? (cell.total as bigint) + by : (cell.total as number) + (by as number)) as V;
  }
}
