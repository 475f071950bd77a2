/** One sample of Prometheus' text format: its name, labels and value. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export type Samples = PromSample[];

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses Prometheus' text exposition format (version 0.0.4); throws on a line that is not in it. */
export function parsePrometheus(text: string): Samples {
  const samples: Samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) {
      if (line.startsWith('# ') && !/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /.test(line)) throw new Error(`not a HELP or TYPE line: ${line}`);
      continue;
    }
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const raw = m[3] as string;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw.toLowerCase() !== 'nan') throw new Error(`not a value: ${line}`);
    samples.push({ name: m[1] as string, labels, value });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels` (0 when there are none). */
export function sample(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}
