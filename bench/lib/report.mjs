// Figures and tables of a bench run, and the summary of a --profile run's .cpuprofile.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const sortedLatencies = (runs) => Float64Array.from(runs.flatMap((r) => Array.from(r.latencies))).sort();

export const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : String(n));

/** Prints rows (arrays of strings) as aligned columns; the first `left` columns are left-aligned. */
export function printRows(rows, left = 2, out = process.stdout) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const [i, r] of rows.entries()) {
    out.write(
      `${r
        .map((c, j) => (j < left ? (c ?? '').padEnd(widths[j]) : (c ?? '').padStart(widths[j])))
        .join('  ')
        .trimEnd()}\n`,
    );
    if (i === 0) out.write(`${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  }
}

/** Prints rows (the first is the header) as a Markdown table, after a blank line. */
export function printMarkdown(rows, out = process.stdout) {
  const md = (r) => `| ${r.join(' | ')} |\n`;
  out.write('\n' + md(rows[0]) + md(rows[0].map(() => '---')));
  for (const r of rows.slice(1)) out.write(md(r));
}

// ---------------------------------------------------------------------------------------------
// Profile summary (--profile): the top self-time functions of Tollgate's .cpuprofile.

function shortUrl(url, root) {
  if (!url) return '';
  const p = url.replace(/^file:\/\//, '');
  const nm = p.lastIndexOf('/node_modules/');
  if (nm >= 0) return p.slice(nm + '/node_modules/'.length);
  if (p.startsWith(root)) return p.slice(root.length + 1);
  // Another checkout's build (a --baseline): its dist/ as this one's.
  const dist = p.lastIndexOf('/dist/');
  return dist >= 0 ? p.slice(dist + 1) : p;
}

/** The area a script's URL belongs to: a folder of Tollgate's dist/, an npm package, a module of Node's core. */
export function areaOfUrl(url, root) {
  const u = shortUrl(url, root);
  if (!u) return '(native / VM)';
  if (u.startsWith('node:')) {
    const m = u.replace(/^node:(internal\/)?/, '');
    if (/^(modules|bootstrap|main)\//.test(m)) return 'node core: module loading (start-up)';
    if (m.startsWith('_http_')) return 'node core: http';
    return `node core: ${m.split('/')[0].replace(/\.js$/, '')}`;
  }
  if (u.startsWith('dist/')) return `tollgate ${u.split('/').slice(0, 2).join('/').replace(/\.js$/, '')}`;
  const parts = u.split('/');
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * Self time (µs) of a .cpuprofile by function and by area, idle excluded; with `windows` (`{ from, to }`
 * in µs of the monotonic clock, `process.hrtime.bigint() / 1000n`, the clock V8 stamps samples with),
 * only the samples taken inside them: the measured rounds, without start-up and warm-up.
 */
function selfTimes(file, root, windows) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const spans = windows?.map((w) => [Number(w.from), Number(w.to)]);
  const self = new Map();
  let at = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    at += prof.timeDeltas[i] ?? 0;
    if (spans && !spans.some(([from, to]) => at >= from && at < to)) continue;
    const node = byId.get(prof.samples[i]);
    self.set(node, (self.get(node) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  const totals = emptyTotals();
  for (const [node, us] of self) if (node.callFrame.functionName !== '(idle)') add(totals, node.callFrame, us, root);
  return totals;
}

/** Adds `amount` to `totals`: to the function of `callFrame` (name, file and line), to its area and in all. */
function add(totals, cf, amount, root) {
  const k = `${cf.functionName || '(anonymous)'}  ${shortUrl(cf.url, root)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
  totals.byFn.set(k, (totals.byFn.get(k) ?? 0) + amount);
  const a = cf.url ? areaOfUrl(cf.url, root) : cf.functionName;
  totals.byArea.set(a, (totals.byArea.get(a) ?? 0) + amount);
  totals.total += amount;
}

/** Totals by function and by area, and in all, as selfTimes, addAllocations and perf.mjs add them up. */
export const emptyTotals = () => ({ byFn: new Map(), byArea: new Map(), total: 0 });

/** The `n` largest entries of `m`, one line each: `format(value)`, then the key. */
export function topList(m, n, format) {
  return [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `  ${format(v)}  ${k}`)
    .join('\n');
}

/**
 * A Tollgate's totals by area against the bare proxy's, in µs a request (`{ totals, requests }` each,
 * totals in µs), the areas that differ most first, under `title`.
 */
export function compareAreas(title, bare, tollgate, top = 20) {
  const [a, na, b, nb] = [bare.totals, bare.requests, tollgate.totals, tollgate.requests];
  const rows = [...new Set([...a.byArea.keys(), ...b.byArea.keys()])]
    .map((k) => [k, (a.byArea.get(k) ?? 0) / na, (b.byArea.get(k) ?? 0) / nb])
    .sort((x, y) => y[2] - y[1] - (x[2] - x[1]));
  const line = (k, x, y) => `  ${fmt(x, 1).padStart(7)}  ${fmt(y, 1).padStart(8)}  ${fmt(y - x, 1).padStart(7)}  ${k}`;
  return (
    `${title} (bare ${fmt(na)}, tollgate ${fmt(nb)} requests):\n` +
    `     bare  tollgate     more  area\n` +
    `${line('all', a.total / na, b.total / nb)}\n` +
    rows
      .slice(0, top)
      .map(([k, x, y]) => line(k, x, y))
      .join('\n') +
    '\n'
  );
}

// ---------------------------------------------------------------------------------------------
// Allocation profiles (open-loop --alloc): V8's sampling heap profiler, garbage included.

/** Adds a sampling heap profile's bytes (each node's selfSize) to `totals` ({ byFn, byArea, total }) by function and area. */
export function addAllocations(totals, profile, root) {
  // A builtin's bytes (a frame without a file: Map.prototype.set, RegExp.prototype.exec, …) go to the
  // nearest caller with a file, named after both: `set (builtin) in charge  dist/ledger/…:458`.
  const walk = (node, caller) => {
    const cf = node.callFrame;
    if (node.selfSize > 0) {
      if (cf.url || !caller) add(totals, cf, node.selfSize, root);
      else
        add(
          totals,
          { ...caller, functionName: `${cf.functionName || '(anonymous)'} (builtin) in ${caller.functionName || '(anonymous)'}` },
          node.selfSize,
          root,
        );
    }
    for (const child of node.children) walk(child, cf.url ? cf : caller);
  };
  walk(profile.head, undefined);
  return totals;
}

/** What a process allocated a request (KB), by function and by area, the most first. */
export function allocationReport(label, totals, requests, { top = 15, survivors = false, fullGcs = 0 } = {}) {
  const kb = (bytes) => `${(bytes / requests / 1024).toFixed(2).padStart(7)} KB`;
  // A full collection sweeps young garbage too, which the profile then holds: the count says how much to trust it.
  const what = survivors ? `that outlived the young generation (sampled, ${fullGcs} full collections during the profiles` : '(sampled, garbage included';
  return (
    `[${label}] ${kb(totals.total).trim()} allocated a request ${what}; ${fmt(requests)} requests)\n` +
    `top ${top} functions by bytes they allocated themselves:\n${topList(totals.byFn, top, kb)}\n` +
    `by area:\n${topList(totals.byArea, 12, kb)}\n`
  );
}

export function summarizeProfile(file, root, top = 10, windows = undefined) {
  const { byFn, byArea, total } = selfTimes(file, root, windows);
  const share = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${fmt(us / 1000).padStart(6)} ms`;
  return (
    `profile ${file}: ${fmt(total / 1000)} ms of CPU samples (idle excluded${windows ? ', measured rounds only' : ''})\n` +
    `top ${top} functions by self time:\n${topList(byFn, top, share)}\n` +
    `self time by area:\n${topList(byArea, 15, share)}\n`
  );
}

/**
 * Where a Tollgate's CPU goes beyond the bare proxy's: self time by area in µs per request, counting
 * only the samples inside each one's measured rounds (`windows`: `{ from, to, requests }`), so that
 * neither start-up nor warm-up is in it, the areas that differ most first.
 */
export function compareProfiles(bare, tollgate, root, top = 20) {
  const measured = (p) => ({ totals: selfTimes(p.file, root, p.windows), requests: p.windows.reduce((n, w) => n + w.requests, 0) });
  return compareAreas('self time by area, µs per request of the measured rounds', measured(bare), measured(tollgate), top);
}

/**
 * What a --profile run prints at the end, for `profiles` (`{ mode, label, bare, file, windows }`, one per
 * process profiled, `windows` its measured rounds: `{ from, to, requests }`, µs on the profile's clock):
 * each one's summary, and each Tollgate's against the bare proxy of its mode. Writes each profile's
 * windows beside it (`FILE.windows.json`), for reading it again later.
 */
export function profileReport(profiles, root) {
  let out = '';
  for (const p of profiles) {
    const written = existsSync(p.file);
    if (written) writeFileSync(`${p.file}.windows.json`, `${JSON.stringify(p.windows.map((w) => ({ ...w, from: Number(w.from), to: Number(w.to) })))}\n`);
    out += `\n[${p.mode} ${p.label}] ${written ? summarizeProfile(p.file, root, 10, p.windows) : `no profile was written to ${p.file}\n`}`;
    const bare = profiles.find((b) => b.bare && b.mode === p.mode);
    if (written && !p.bare && bare && existsSync(bare.file)) out += `[${p.mode} ${p.label} against bare] ${compareProfiles(bare, p, root)}`;
  }
  return out;
}
