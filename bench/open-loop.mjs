#!/usr/bin/env node
// Latency at a fixed rate: an open loop (requests sent on schedule, whatever the answers) through the
// bare pass-through and Tollgate, optionally beside another build of Tollgate (--baseline DIR, a built
// checkout), in alternating rounds, with each Tollgate's event-loop delay over the round. What the
// latency table of `npm run bench` measures, at a rate you choose and with a build to compare against:
// the way to tell whether a change moved the tail (bench/README.md, 2026-11-25, third session).
//
//   npm run build && node bench/open-loop.mjs [--deployment sqlite|postgres-redis] [--mode json|sse]
//                                             [--rate 1000] [--seconds 3] [--rounds 6] [--baseline DIR] [--profile DIR] [--gc]
//                                             [--alloc DIR [--survivors]] [--perf DIR]
//
// --gc: what each process's garbage collector did in its rounds (v8.GCProfiler, through the probe): the
// bytes a request allocated in the young generation and those that outlived it into the old one, the
// scavenges' pauses and the full collections. Promoted bytes fill the old generation, and each full
// collection that follows slows every answer for ~100 ms on the measured core (bench/README.md, ninth session).
//
// --alloc DIR: what each process allocated a request, garbage included, by the function that allocated it
// and by area (V8's sampling heap profiler, through the probe, around each of its rounds; one .heapprofile a
// round in DIR, which Chrome's DevTools opens). Allocation is what fills the young generation: the fewer
// bytes a request, the fewer scavenges (bench/README.md, tenth session). The profiler slows the rounds.
// With --survivors, only what outlived the young generation (objects a scavenge collected are left out):
// what a request adds to the old generation, which full collections then reclaim (thirty-seventh session).
//
// --perf DIR: each measured round of the bare proxy and each Tollgate recorded by Linux perf (every thread,
// the kernel included; one .data file a round in DIR), then each process's CPU a request by area and
// function, and each Tollgate's areas against the bare proxy's, as `overhead.mjs --perf` gives them at
// saturation: where the CPU goes at a moderate rate, where turns and commits carry few requests.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pinning, probe, stopAll } from './lib/children.mjs';
import { runOpenLoop, warmUp } from './lib/load.mjs';
import { findPerf, printPerfRuns, recordPerf } from './lib/perf.mjs';
import { addAllocations, allocationReport, emptyTotals, median, percentile, profileReport } from './lib/report.mjs';
import { checkBuildOptions, dieAs, setUp, startBuilds, parseOptions, buildOptions, warmupMsOf, warmupSecondsOption } from './lib/cli-options.mjs';
import { root, startBare } from './lib/targets.mjs';

const opt = parseOptions('open-loop', {
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '3' },
  rounds: { type: 'string', default: '6' },
  // unmeasured requests through each proxy first (closed loop, 16 at a time), so V8 has compiled its code
  warmup: { type: 'string', default: '2000' },
  // and for at least this long (s; default: the settlement window and 2 s more)
  ...warmupSecondsOption,
  // node --cpu-prof of the bare proxy and each Tollgate, one .cpuprofile each in DIR (their figures are inflated)
  profile: { type: 'string' },
  gc: { type: 'boolean', default: false },
  alloc: { type: 'string' },
  // with --alloc: only the objects no scavenge collected
  survivors: { type: 'boolean', default: false },
  // each measured round recorded by Linux perf, one .data file a round in DIR
  perf: { type: 'string' },
  ...buildOptions,
});
const die = dieAs('open-loop');
const baseline = checkBuildOptions(opt, die);
const RATE = Number(opt.rate);
const SECONDS = Number(opt.seconds);
const ROUNDS = Number(opt.rounds);
if (!(RATE >= 1 && RATE <= 20_000)) die('--rate 1..20000 requests a second');
if (!(SECONDS > 0 && SECONDS <= 60)) die('--seconds 0..60');
if (!(Number.isInteger(ROUNDS) && ROUNDS >= 1 && ROUNDS <= 50)) die('--rounds 1..50');
const WARMUP = Number(opt.warmup);
if (!(Number.isInteger(WARMUP) && WARMUP >= 0 && WARMUP <= 1_000_000)) die('--warmup 0..1000000');
const WARMUP_MS = WARMUP > 0 ? warmupMsOf(opt, die) : 0;

/** Adds a round's garbage collections (the probe's `gc-stop`) to the process's totals. */
function addGc(p, gc, requests) {
  if (!gc) return;
  const t = (p.gc ??= { requests: 0 });
  t.requests += requests;
  for (const [k, v] of Object.entries(gc)) if (typeof v === 'number') t[k] = (t[k] ?? 0) + v;
}

/** Stops the round's allocation profile of `p`, keeps it in allocDir and adds it to the process's totals. */
async function addAlloc(p, round, requests) {
  const file = path.join(allocDir, `${p.id.replaceAll(':', '-')}-round${round}.heapprofile`);
  const { fullGcs } = await probe(p.child, 'alloc-stop', 30_000, { file });
  p.alloc ??= { totals: emptyTotals(), requests: 0, fullGcs: 0 };
  p.alloc.fullGcs += fullGcs ?? 0;
  addAllocations(p.alloc.totals, JSON.parse(readFileSync(file, 'utf8')), root);
  p.alloc.requests += requests;
}

/** After a full collection's pause, the requests sent this long after it still wait behind its backlog. */
const AFTER_FULL_GC_MS = 100;

/**
 * Splits a round's latencies by whether the request was sent while a full collection ran (from its
 * marking to AFTER_FULL_GC_MS past its pause) or not, into the process's totals: how much of the p99
 * the full collections make (on one core a full collection slows every request around it).
 */
function addFullGcLatencies(p, run, windows) {
  const t = (p.fullGcSplit ??= { during: [], outside: [], windowMs: 0 });
  for (const [from, to] of windows) t.windowMs += to + AFTER_FULL_GC_MS - from;
  for (let i = 0; i < run.latencies.length; i++) {
    const at = run.sent[i];
    const during = windows.some(([from, to]) => at >= from && at <= to + AFTER_FULL_GC_MS);
    (during ? t.during : t.outside).push(run.latencies[i]);
  }
}

function printFullGcSplit(proxies) {
  process.stdout.write(
    `\nlatency (ms) of the requests sent during a full collection (its marking, its pause and ${AFTER_FULL_GC_MS} ms after) and of the others (--gc):\n`,
  );
  const cells = (c) => process.stdout.write(c.map((x, i) => (i ? String(x).padStart(12) : String(x).padEnd(26))).join(' ') + '\n');
  cells(['proxy', 'full GC s', 'sent during', 'during p50', 'during p99', 'others p50', 'others p99', 'all p99']);
  for (const p of proxies) {
    const t = p.fullGcSplit;
    if (!t) continue;
    const sorted = (xs) => Float64Array.from(xs).sort();
    const [during, outside, all] = [sorted(t.during), sorted(t.outside), sorted([...t.during, ...t.outside])];
    const pc = (xs, q) => (xs.length > 0 ? percentile(xs, q).toFixed(2) : '–');
    cells([
      p.label,
      (t.windowMs / 1000).toFixed(2),
      `${((100 * during.length) / Math.max(1, all.length)).toFixed(1)} %`,
      pc(during, 50),
      pc(during, 99),
      pc(outside, 50),
      pc(outside, 99),
      pc(all, 99),
    ]);
  }
}

function printGc(proxies) {
  process.stdout.write('\ngarbage collection over the rounds (--gc), a request:\n');
  const cells = (c) => process.stdout.write(c.map((x, i) => (i ? String(x).padStart(16) : String(x).padEnd(26))).join(' ') + '\n');
  cells(['proxy', 'young KB', 'promoted KB', 'scavenge µs', 'scavenges/1k req', 'full GCs', 'full GC ms each']);
  for (const p of proxies) {
    const g = p.gc;
    if (!g || g.requests === 0) continue;
    const r = g.requests;
    cells([
      p.label,
      (g.allocated / r / 1024).toFixed(1),
      (g.promoted / r / 1024).toFixed(2),
      (g.scavengeUs / r).toFixed(1),
      ((g.scavenges * 1000) / r).toFixed(1),
      g.majors,
      g.majors ? (g.majorUs / g.majors / 1000).toFixed(1) : '',
    ]);
  }
}

// As in overhead.mjs: the measured proxies on the last CPU, this script and the upstream on the others.
const pin = pinning('auto', die);
/** The profiled processes (--profile), reported once they have exited and written their profiles. */
let profiled;
const profileDir = opt.profile === undefined ? undefined : path.resolve(opt.profile);
const allocDir = opt.alloc === undefined ? undefined : path.resolve(opt.alloc);
if (allocDir) mkdirSync(allocDir, { recursive: true });
const perfDir = opt.perf === undefined ? undefined : path.resolve(opt.perf);
if (perfDir) {
  const found = findPerf();
  if (!found.ok) die(found.message);
  mkdirSync(perfDir, { recursive: true });
}
const perf = Boolean(perfDir);

try {
  const { tmp, upstreamUrl } = await setUp('open-loop', { cpus: pin?.others });
  const loadPool = { connections: 16 };
  const bare = await startBare({ upstreamUrl, loadPool, cpus: pin?.proxy, profileDir, tag: 'openloop', perf });
  const tollgates = await startBuilds(opt, baseline, { tag: 'openloop', upstreamUrl, tmp, loadPool, cpus: pin?.proxy, profileDir, perf });
  const proxies = [bare, ...tollgates];
  profiled = proxies.filter((p) => p.profile).map((p) => ({ mode: opt.mode, label: p.label, bare: p === bare, file: p.profile, windows: (p.windows = []) }));
  for (const p of proxies) {
    p.sent = 0;
    await warmUp(p, opt.mode, { requests: WARMUP, ms: WARMUP_MS, concurrency: 16 });
  }
  for (const p of tollgates) await probe(p.child, 'eld-start');

  process.stdout.write(
    `open loop, ${opt.mode}, ${opt.deployment}: ${RATE} requests/s for ${SECONDS} s a round, ${ROUNDS} rounds, order reversed every other round; ` +
      `warm-up: ${WARMUP} requests per proxy${WARMUP_MS > 0 ? ` lasting at least ${WARMUP_MS / 1000} s` : ''}\n` +
      `latency in ms (request sent to last byte read); CPU µs a request; event-loop delay (Tollgate) in ms over the round\n\n`,
  );
  // With --gc, each round also says what it promoted and how many full collections it held, so that a long
  // run (many rounds) tells whether a process's collector does more as it ages.
  const columns = ['round', 'proxy', 'p50', 'p90', 'p99', 'max', 'CPU µs/req', 'ELD p99', 'ELD max', 'behind ms'];
  const header = [...columns, ...(opt.gc ? ['promoted KB', 'full GCs', 'heap MB'] : [])];
  const rows = [];
  const print = (cells) => process.stdout.write(cells.map((c, i) => (i < 2 ? String(c).padEnd(i ? 26 : 5) : String(c).padStart(10))).join(' ') + '\n');
  print(header);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const p of round % 2 ? proxies : [...proxies].reverse()) {
      const from = process.hrtime.bigint() / 1000n; // µs on the clock of a .cpuprofile's samples
      if (opt.gc) await probe(p.child, 'gc-start');
      if (allocDir) await probe(p.child, 'alloc-start', 5_000, { survivors: opt.survivors });
      const perfFile = perfDir && path.join(perfDir, `${p.id.replaceAll(':', '-')}-round${round}.data`);
      const recording = perfFile && (await recordPerf(p.child.pid, perfFile));
      const c0 = (await p.cpu()).us;
      const run = await runOpenLoop(p, opt.mode, RATE, SECONDS);
      const cpu = ((await p.cpu()).us - c0) / run.latencies.length;
      if (recording) {
        await recording.stop();
        (p.perfRounds ??= { files: [], requests: 0 }).files.push(perfFile);
        p.perfRounds.requests += run.latencies.length;
      }
      const gc = opt.gc ? (await probe(p.child, 'gc-stop')).gc : undefined;
      addGc(p, gc, run.latencies.length);
      if (gc) addFullGcLatencies(p, run, gc.fullWindows ?? []);
      if (allocDir) await addAlloc(p, round, run.latencies.length);
      (p.windows ??= []).push({ from, to: process.hrtime.bigint() / 1000n, requests: run.latencies.length });
      const sorted = Float64Array.from(run.latencies).sort();
      const stats = await probe(p.child, 'stats');
      const eld = p === bare ? undefined : stats.eld;
      // A long run spends more than the bench account's credits: what the round spent is credited back.
      await p.creditBack?.(run.latencies.length);
      const row = {
        round,
        proxy: p.label,
        p50: percentile(sorted, 50),
        p90: percentile(sorted, 90),
        p99: percentile(sorted, 99),
        max: sorted[sorted.length - 1],
        cpu,
        eldP99: eld?.p99,
        eldMax: eld?.max,
        behind: run.behindMs,
        promoted: gc ? gc.promoted / run.latencies.length / 1024 : undefined,
        majors: gc?.majors,
        heap: stats.mem ? stats.mem.heapUsed / 1048576 : undefined,
      };
      rows.push(row);
      const f = (n, d = 2) => (n === undefined ? '' : n.toFixed(d));
      const gcCells = opt.gc ? [f(row.promoted), String(row.majors), f(row.heap, 1)] : [];
      print([round, p.label, f(row.p50), f(row.p90), f(row.p99), f(row.max, 1), f(cpu, 0), f(row.eldP99, 1), f(row.eldMax, 1), f(row.behind, 1), ...gcCells]);
    }
  }
  process.stdout.write('\nmedian over the rounds:\n');
  print(columns.map((h, i) => (i === 0 ? '' : h)));
  for (const p of proxies) {
    const mine = rows.filter((r) => r.proxy === p.label);
    const m = (k, d = 2) => (mine[0][k] === undefined ? '' : median(mine.map((r) => r[k])).toFixed(d));
    print(['', p.label, m('p50'), m('p90'), m('p99'), m('max', 1), m('cpu', 0), m('eldP99', 1), m('eldMax', 1), m('behind', 1)]);
  }
  if (opt.gc) {
    printGc(proxies);
    printFullGcSplit(proxies);
  }
  if (allocDir) {
    process.stdout.write(`\nallocations over the rounds (--alloc; the profiles are in ${allocDir}):\n`);
    for (const p of proxies)
      if (p.alloc)
        process.stdout.write(`\n${allocationReport(p.label, p.alloc.totals, p.alloc.requests, { survivors: opt.survivors, fullGcs: p.alloc.fullGcs })}`);
  }
  if (perfDir) {
    process.stdout.write(`\nwhere the CPU went (--perf; the recordings are in ${perfDir}):\n`);
    const runs = proxies.filter((p) => p.perfRounds).map((p) => ({ label: p.label, bare: p === bare, ...p.perfRounds }));
    await printPerfRuns(runs, root);
  }
  const behind = Math.max(...rows.map((r) => r.behind));
  if (behind > 5) process.stdout.write(`\nwarning: the load generator fell up to ${behind.toFixed(1)} ms behind its schedule\n`);
  for (const p of tollgates) {
    const check = await p.ledgerCheck();
    process.stdout.write(`ledger check (${p.label}): ${check.text} ${check.ok ? 'OK' : 'MISMATCH'}\n`);
    if (!check.ok) process.exitCode = 1;
  }
} finally {
  await stopAll();
}
// Written as each process exits: where each Tollgate's CPU goes beyond the bare proxy's, in the measured rounds.
if (profiled) process.stdout.write(profileReport(profiled, root));
