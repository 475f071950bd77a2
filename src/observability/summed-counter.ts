import { Counter, type Registry } from 'prom-client';

interface Cell<V> {
  labels: string[];
  pending: V;
}

/** The key of a series by its label values (in the order of the metric's label names). */
export function seriesKey(labelValues: readonly string[]): string {
  return labelValues.length === 1 ? (labelValues[0] as string) : labelValues.join('\u0000');
}

/**
 * A Prometheus counter whose increments are summed here, by their label values, and handed to
 * prom-client when the registry is scraped: prom-client's `labels(…).inc()` builds, validates and
 * hashes a label object on every call, which the chat route would pay several times a request.
 * `V` is what is summed (a number, or exact nanocredits as a bigint) and `toValue` turns a sum into
 * the counter's value at scrape time.
 */
export class SummedCounter<V extends number | bigint> {
  private readonly cells = new Map<string, Cell<V>>();

  constructor(options: { name: string; help: string; labelNames: readonly string[]; registry: Registry }, zero: V, toValue: (sum: V) => number) {
    const cells = this.cells;
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
    const key = seriesKey(labels);
    const cell = this.cells.get(key);
    if (cell) cell.pending = (typeof by === 'bigint' ? (cell.pending as bigint) + by : (cell.pending as number) + (by as number)) as V;
    else this.cells.set(key, { labels, pending: by });
  }
}
