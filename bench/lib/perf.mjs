// Linux `perf` for the bench's --perf: records a process's CPU over a measured turn (cpu-clock samples
// with call stacks, every thread) and tells where it went, by area and by function, in µs a request.
// Unlike V8's --cpu-prof it neither inflates JavaScript nor hides what runs beneath it: the kernel's
// socket and file work, V8's garbage collector and compiler threads, SQLite's C code, malloc. Node
// processes run with --perf-basic-prof-only-functions, so that perf can name JIT-compiled functions.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { areaOfUrl, compareAreas, emptyTotals, fmt, topList } from './report.mjs';

/** Samples a second a thread (cpu-clock): each sample stands for 1e6 / FREQUENCY µs of CPU. */
const FREQUENCY = 4000;
const SAMPLE_US = 1e6 / FREQUENCY;

/** The node flag that makes V8 write /tmp/perf-PID.map, naming its JIT code for perf. */
export const PERF_NODE_FLAGS = ['--perf-basic-prof-only-functions'];

/** The perf binary, or a message saying what is missing. */
export function findPerf() {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
    return { ok: true };
  } catch {
    return { ok: false, message: '--perf needs Linux perf on PATH (Debian: apt-get install linux-perf)' };
  }
}

/**
 * Resolves once process `perfPid` has its perf_event descriptors open for every thread of `pid` (perf
 * opens them a thread at a time as it attaches: on a busy machine a short turn could pass before it
 * reached the thread that does the work, and the smoke test read 0 samples of the bare proxy once),
 * and a few ms more; or after 10 s, or once it exits.
 */
async function attached(perfPid, pid, exited) {
  let gone = false;
  void exited.then(() => (gone = true));
  const count = (dir, keep) => {
    try {
      return readdirSync(dir).filter(keep).length;
    } catch {
      return 0;
    }
  };
  const threads = () => count(`/proc/${pid}/task`, () => true);
  const counting = () =>
    count(`/proc/${perfPid}/fd`, (fd) => {
      try {
        return readlinkSync(`/proc/${perfPid}/fd/${fd}`).includes('perf_event');
      } catch {
        return false;
      }
    });
  // (Several descriptors a thread, one a CPU: done once there are at least as many as threads and their
  // number has not moved for three polls.)
  const deadline = Date.now() + 10_000;
  let last = -1;
  let steady = 0;
  while (!gone && Date.now() < deadline) {
    const n = counting();
    steady = n === last ? steady + 1 : 0;
    last = n;
    if (n >= Math.max(1, threads()) && steady >= 3) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Starts recording process `pid` (every thread) into `file`; `stop()` ends the recording once perf wrote it. */
export async function recordPerf(pid, file) {
  const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(FREQUENCY), '-g', '-p', String(pid), '-o', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  perf.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => perf.on('exit', (code, signal) => resolve({ code, signal })));
  // The load starts once perf counts every thread of `pid`, which on a busy machine can take longer
  // than any fixed wait.
  await attached(perf.pid, pid, exited);
  return {
    async stop() {
      perf.kill('SIGINT');
      const { code } = await exited;
      if (code !== 0 && code !== null && !/Woken up/.test(err)) throw new Error(`perf record of ${pid} failed (${code}): ${err.trim()}`);
    },
  };
}

const GC = /Scaveng|Marking|MarkCompact|Sweep|Heap::|Evacuat|MinorGC/;
const COMPILER = /compiler::|OptimizingCompileDispatcher|Compile(Lazy|Task|Batch)|Maglev|baseline::/;

/**
 * The area a sample's CPU goes to: that of the nearest JavaScript frame on its stack (what the code
 * ran, builtins and runtime calls included), else what the stack shows (the collector, the compiler,
 * or native work with no JavaScript under way: the event loop's polling, a thread of libuv's).
 */
function classify(stack, root) {
  for (const frame of stack) {
    if (!frame.startsWith('JS:')) continue;
    const at = frame.lastIndexOf(' ');
    const location = at > 0 ? frame.slice(at + 1).replace(/\+0x[0-9a-f]+$/, '') : '';
    const url = location.replace(/:\d+:\d+$/, '');
    const name = frame.slice(4, at > 0 ? at : undefined).trim() || '(anonymous)';
    return {
      area: url ? areaOfUrl(url, root) : 'JavaScript (unnamed)',
      fn: `${name}  ${url ? location.replace(/^file:\/\//, '').replace(`${root}/`, '') : ''}`,
    };
  }
  const all = stack.join(' ');
  if (GC.test(all)) return { area: 'V8 garbage collector', fn: 'V8 garbage collector' };
  if (COMPILER.test(all)) return { area: 'V8 JIT compiler', fn: 'V8 JIT compiler' };
  return { area: 'native, no JavaScript on the stack', fn: 'native, no JavaScript on the stack' };
}

/** Reads `perf script` of each file and adds its samples, in µs of CPU, to `totals` (report.mjs's emptyTotals()). */
export async function addPerfSamples(totals, files, root) {
  for (const file of files) {
    const script = spawn('perf', ['script', '-i', file], { stdio: ['ignore', 'pipe', 'ignore'] });
    const lines = createInterface({ input: script.stdout, crlfDelay: Infinity });
    let stack = [];
    const flush = () => {
      if (stack.length === 0) return;
      const { area, fn } = classify(stack, root);
      totals.byArea.set(area, (totals.byArea.get(area) ?? 0) + SAMPLE_US);
      totals.byFn.set(fn, (totals.byFn.get(fn) ?? 0) + SAMPLE_US);
      totals.total += SAMPLE_US;
      stack = [];
    };
    for await (const line of lines) {
      if (line.trim() === '') flush();
      else if (line[0] === '\t' || line[0] === ' ') {
        // "\t    7f12ab34 SYMBOL (DSO)": the symbol, without its address and its object file.
        const text = line.trim();
        const sp = text.indexOf(' ');
        const sym = sp < 0 ? text : text.slice(sp + 1);
        const dso = sym.lastIndexOf(' (');
        stack.push(dso > 0 ? sym.slice(0, dso) : sym);
      }
    }
    flush();
    await new Promise((resolve) => (script.exitCode === null ? script.on('exit', resolve) : resolve()));
  }
  return totals;
}

/** One process's perf report: µs a request in all, by area and by function (the most first). */
export function perfReport(label, totals, requests, top = 20) {
  const us = (total) => fmt(total / requests, 1).padStart(7);
  return (
    `[${label}] perf: ${us(totals.total).trim()} µs of CPU a request (${fmt(requests)} requests, every thread)\n` +
    `by area (each sample to the nearest JavaScript frame on its stack, with the builtins and runtime it called):\n${topList(totals.byArea, 18, us)}\n` +
    `top ${top} functions:\n${topList(totals.byFn, top, us)}\n`
  );
}

/**
 * Prints each recorded process's perf report (perfReport), and each Tollgate's areas against the bare
 * proxy's of its mode. `runs`: { mode (omitted by a script that runs one), label, bare, files, requests }.
 */
export async function printPerfRuns(runs, root) {
  for (const r of runs) r.totals = await addPerfSamples(emptyTotals(), r.files, root);
  for (const r of runs) {
    const tag = r.mode === undefined ? '' : `${r.mode} `;
    process.stdout.write(`\n${r.mode === undefined ? '' : `[${r.mode}] `}${perfReport(r.label, r.totals, r.requests)}`);
    const bare = runs.find((b) => b.bare && b.mode === r.mode);
    if (!r.bare && bare) process.stdout.write(`[${tag}${r.label} against bare] ${compareAreas('perf, µs a request by area', bare, r, 22)}\n`);
  }
}
