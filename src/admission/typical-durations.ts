/** How many recent requests of a model the typical duration is taken from. */
const SAMPLES = 16;

/**
 * The recent typical duration of each model's requests (the median of its last few), which tells a
 * refused client how long the running requests that fill its budget will take. Observed in this
 * process: a hint for Retry-After, never a limit. Models come from config, so it stays small.
 */
export class TypicalDurations {
  private readonly recent = new Map<string, number[]>();

  record(model: string, durationMs: number): void {
    const list = this.recent.get(model) ?? [];
    list.push(Math.max(0, durationMs));
    if (list.length > SAMPLES) list.shift();
    this.recent.set(model, list);
  }

  /** The median of the model's recent durations, or undefined before any request ended. */
  typical(model: string): number | undefined {
    const list = this.recent.get(model);
    if (!list || list.length === 0) return undefined;
    const sorted = [...list].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)];
  }
}
