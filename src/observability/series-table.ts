/**
 * A metric's series by their label values (always as many as the metric has label names): one Map a
 * label, so that a lookup hashes the label strings it is given, whose hashes V8 keeps in them (a
 * model's id, a provider's), instead of a key joined afresh on every call and hashed anew.
 */
export class SeriesTable<S> {
  private readonly root = new Map<string, unknown>();
  private readonly all: S[] = [];

  /** `make` creates the series of label values not seen before. */
  constructor(private readonly make: (labelValues: readonly string[]) => S) {}

  /** The series of these label values (in the order of the metric's label names), created if new. */
  of(labelValues: readonly string[]): S {
    let level = this.root;
    const last = labelValues.length - 1;
    for (let i = 0; i < last; i++) {
      const value = labelValues[i] as string;
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const value = last >= 0 ? (labelValues[last] as string) : '';
    let series = level.get(value) as S | undefined;
    if (series === undefined) {
      series = this.make([...labelValues]);
      level.set(value, series);
      this.all.push(series);
    }
    return series;
  }

  /** Every series, in the order they were created. */
  values(): readonly S[] {
    return this.all;
  }

  clear(): void {
    this.root.clear();
    this.all.length = 0;
  }
}
