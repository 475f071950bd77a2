#!/usr/bin/env node
// Instructions a request, counted by valgrind's callgrind: the same ratios as `npm run bench`, read in
// a unit this machine's noise does not move (bench/README.md).
//
// CPU time on this 2-core host moves by ±40 % between rounds of one run and threefold between days, so
// a ratio to the bare proxy read in seconds says as much about the host as about the code. callgrind
// counts the instructions a process executes (every thread; the kernel's are not counted), and the
// count for the same code and the same requests is the same whatever else the machine does. Each proxy
// runs under `valgrind --tool=callgrind` with counting off; it is warmed up uncounted (the JIT compiler
// settles as it does outside valgrind, by calls, not seconds), then each round zeroes the counters,
// turns counting on (`callgrind_control -i on`), sends --requests requests from --concurrency workers,
// turns it off and dumps: the dump's total over the requests answered is the round's figure.
//
// V8's optimizing compiler (TurboFan) still runs now and then after 20,000 requests (a function hot
// late, or optimised again after a deoptimisation: `--trace-opt` shows a few a thousand requests at full
// speed too), each job millions of instructions, so its jobs make most of a round's variance. Each
// round's dump is read with callgrind_annotate, and the table gives TurboFan's jobs apart and the rest
// (what the requests themselves executed), with the ratio to the bare proxy of both. Of the rest, the
// garbage collector's own instructions move with where a round's few collections fall (a round of 1,000
// Tollgate requests holds three to five scavenges, and now and then a full collection), so they are
// given apart too, with "the code": the rest without them. The code's rounds still move, by 5-30 % for
// Tollgate on SQLite (V8 tiering functions up and down again, and how many charges each group commit
// carries), so two builds are compared over five rounds or more, and their CPU side by side.
//
// Valgrind runs a process 20–100 times slower, so at real time its timers and TTLs (the caches, the
// journal's apply, V8's own heuristics) would fall 20–100 times more often a request than at full speed.
// So each proxy's clock is slowed with libfaketime to --time-scale (0.01) of real time, but Tollgate on
// postgres-redis's, whose leases go by Redis's clock; the table's `req/s seen` is the rate by that clock.
// Instructions only: not the kernel's, nor what a cache miss costs; the full bench says what seconds cost.
//
//   node bench/instructions.mjs [--proxies bare,floor,floor-fastify,tollgate] [--deployments sqlite,postgres-redis]
//                               [--modes json,sse] [--warmup 20000] [--requests 2000] [--rounds 5]
//                               [--concurrency 16] [--time-scale 0.01] [--baseline DIR] [--dumps DIR [--jit-names]]
//                               [--markdown]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseOptions, dieAs, setUp, storeOptions } from './lib/cli-options.mjs';
import { onStopAll, pinning, stopAll, stopChild } from './lib/children.mjs';
import { annotatedFunctions, areaOfFunction, selfByArea } from './lib/callgrind-areas.mjs';
import { nameJitCode } from './lib/jit-names.mjs';
import { runLoad } from './lib/load.mjs';
import { fmt, median, printMarkdown, printRows } from './lib/report.mjs';
import { sharedStores, sharedStoresUnreachable } from './lib/stores.mjs';
import { CLI, root, startBare, startFloor, startFloorOnFastify, startTollgate } from './lib/targets.mjs';

const opt = parseOptions('instructions', {
  proxies: { type: 'string', default: 'bare,floor,tollgate' },
  deployments: { type: 'string', default: 'sqlite,postgres-redis' },
  modes: { type: 'string', default: 'json,sse' },
  warmup: { type: 'string', default: '20000' },
  requests: { type: 'string', default: '2000' },
  rounds: { type: 'string', default: '5' },
  concurrency: { type: 'string', default: '16' },
  baseline: { type: 'string' },
  markdown: { type: 'boolean', default: false },
  'time-scale': { type: 'string', default: '0.01' },
  dumps: { type: 'string' },
  'jit-names': { type: 'boolean', default: false },
  ...storeOptions,
});
const die = dieAs('instructions');
const int = (name, min, max) => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < min || n > max) die(`--${name} takes an integer from ${min} to ${max}`);
  return n;
};
const listOf = (name, allowed) => {
  const xs = opt[name]
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const x of xs) if (!allowed.includes(x)) die(`--${name}: ${x} is not one of ${allowed.join(', ')}`);
  return xs;
};
const WARMUP = int('warmup', 0, 200_000);
const REQUESTS = int('requests', 10, 100_000);
const ROUNDS = int('rounds', 1, 20);
const CONCURRENCY = int('concurrency', 1, 256);
const PROXIES = listOf('proxies', ['bare', 'floor', 'floor-fastify', 'tollgate']);
const DEPLOYMENTS = listOf('deployments', ['sqlite', 'postgres-redis']);
const MODES = listOf('modes', ['json', 'sse']);
const TIME_SCALE = Number(opt['time-scale']);
if (!(TIME_SCALE > 0 && TIME_SCALE <= 1)) die('--time-scale takes a number above 0 and at most 1 (1: the proxy keeps real time)');
/** libfaketime, which slows the proxy's clock (Debian: libfaketime). */
const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', '/usr/lib/faketime/libfaketimeMT.so.1'].find((f) => existsSync(f));
if (TIME_SCALE !== 1 && !FAKETIME_LIB)
  die("--time-scale below 1 slows the proxy's clock with libfaketime, which is not installed (Debian: apt-get install libfaketime; or --time-scale 1)");
const JIT_NAMES = opt['jit-names'];
if (JIT_NAMES && !opt.dumps) die('--jit-names names the JavaScript in the kept dumps: give --dumps DIR too');
if (!PROXIES.includes('bare')) die('--proxies must include bare: every ratio is to it');
if (!existsSync(CLI)) die('dist/cli.js is missing: run `npm run build` first');
const baseline = opt.baseline === undefined ? undefined : path.resolve(opt.baseline);
if (baseline && !existsSync(path.join(baseline, 'dist', 'cli.js'))) die(`--baseline ${baseline}: no dist/cli.js there (a checkout, built)`);
for (const tool of ['valgrind', 'callgrind_control']) {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' });
  } catch {
    die(`${tool} is not installed (Debian: apt-get install valgrind); this bench counts instructions with it`);
  }
}

/** callgrind_control's command `args` to the process `pid`. */
function control(pid, ...args) {
  execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore', timeout: 60_000 });
}

/** The optimizing compiler's background jobs: what TurboFan spent, whichever thread ran it (inclusive). */
const TURBOFAN = 'v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()';

/** The area (callgrind-areas.mjs) of the garbage collector's functions. */
const GC_AREA = 'V8 garbage collector';

/**
 * A round's dump (callgrind names them STEM.PID.N), once written in full: its file, its total, and of it
 * the instructions of TurboFan's jobs (their inclusive count, 0 when none ran) and the collector's.
 */
async function roundCounts(dir, stem, pid, part) {
  const file = path.join(dir, `${stem}.${pid}.${part}`);
  for (let i = 0; i < 600; i++) {
    if (existsSync(file)) {
      const m = /^totals: (\d+)/m.exec(readFileSync(file, 'utf8'));
      if (m) {
        const turbofan = annotatedFunctions(file, { inclusive: true }).find((f) => f.name === TURBOFAN)?.count ?? 0;
        // The collector's own instructions (its functions are V8's, named without --jit-names).
        let gc = 0;
        for (const f of annotatedFunctions(file)) if (areaOfFunction(f.name, f.object, root) === GC_AREA) gc += f.count;
        return { file, total: Number(m[1]), turbofan, gc };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no callgrind dump ${file} (found: ${readdirSync(dir).join(', ')})`);
}

/** Instructions a request by area for each proxy of `mode` (its median round), the areas where the last proxy spends most first. */
function printAreas(mode, list) {
  if (list.length === 0) return;
  const names = [...new Set(list.flatMap((a) => [...a.byArea.keys()]))];
  const last = list[list.length - 1].byArea;
  names.sort((x, y) => (last.get(y) ?? 0) - (last.get(x) ?? 0));
  const table = [['area', ...list.map((a) => a.proxy)]];
  for (const name of names.slice(0, 25)) table.push([name, ...list.map((a) => fmt((a.byArea.get(name) ?? 0) / REQUESTS))]);
  process.stdout.write(`\n${mode}: instructions a request by area (each function's own, named from the perf map), the median round\n`);
  printRows(table, 1);
  if (opt.markdown) printMarkdown(table);
}

const pin = pinning('auto', die);
const ledger = [];
/** With --jit-names: each proxy's instructions a request by area, in its median round. */
const areas = [];
const rows = [
  [
    'mode',
    'proxy',
    'instr/req',
    'TurboFan',
    'the rest',
    '(per round)',
    'spread',
    '× bare',
    'the rest × bare',
    'collector',
    'the code',
    '(per round)',
    'spread',
    'the code × bare',
    'req/s seen',
    'ledger',
    'took',
  ],
];
try {
  const { tmp, upstreamUrl } = await setUp('instructions', { cpus: pin?.others });
  // --dumps DIR keeps each round's callgrind file (callgrind_annotate reads them: where the instructions
  // went); --jit-names writes beside each a FILE.named with the JavaScript named (bench/lib/jit-names.mjs).
  const dumps = opt.dumps ? path.resolve(opt.dumps) : path.join(tmp, 'callgrind');
  mkdirSync(dumps, { recursive: true });
  const stores = { databaseUrl: opt['database-url'], redisUrl: opt['redis-url'] };
  const skipped = [];
  const deployments = [];
  for (const d of DEPLOYMENTS) {
    const why = d === 'postgres-redis' ? await sharedStoresUnreachable(stores) : undefined;
    if (why) skipped.push(`tollgate postgres-redis skipped: ${why}`);
    else deployments.push(d);
  }
  const specs = [
    { id: 'bare', start: (o) => startBare(o) },
    ...(PROXIES.includes('floor') ? [{ id: 'floor', start: (o) => startFloor(o) }] : []),
    ...(PROXIES.includes('floor-fastify') ? [{ id: 'floor-fastify', start: (o) => startFloorOnFastify(o) }] : []),
    ...(PROXIES.includes('tollgate')
      ? deployments.flatMap((deployment) =>
          [undefined, ...(baseline ? [baseline] : [])].map((build) => ({
            id: `tollgate ${deployment}${build ? ', baseline' : ''}`,
            // Its holds' leases and deadlines go by Redis's clock (TIME: one clock for every process),
            // which libfaketime cannot slow: a slowed gateway would renew them too late, and they would
            // lapse under running requests. So it keeps real time (bench/README.md).
            realTime: deployment === 'postgres-redis',
            start: async (o) => {
              let store;
              if (deployment === 'postgres-redis') {
                store = await sharedStores(stores, `instructions${build ? '_baseline' : ''}`);
                onStopAll(store.drop);
              }
              return startTollgate({ ...o, deployment, free: false, store, baseline: build, windowMs: 5000 });
            },
          })),
        )
      : []),
  ];
  process.stdout.write(
    `instructions a request (valgrind --tool=callgrind), ${new Date().toISOString()}: per proxy and mode ${fmt(WARMUP)} warm-up requests uncounted, ` +
      `then ${ROUNDS} round(s) of ${fmt(REQUESTS)} counted, concurrency ${CONCURRENCY}${pin ? ', pinned' : ''}; ` +
      `the proxy's clock runs at ${TIME_SCALE} of real time, Tollgate on postgres-redis's at real time (req/s seen: by the proxy's clock)\n`,
  );
  for (const line of skipped) process.stdout.write(`${line}\n`);
  for (const mode of MODES) {
    let bare;
    for (const spec of specs) {
      const stem = `${spec.id.replace(/[^a-z0-9]+/gi, '-')}-${mode}`;
      const scale = spec.realTime ? 1 : TIME_SCALE;
      const slowClock = scale === 1 ? [] : ['env', `LD_PRELOAD=${FAKETIME_LIB}`, `FAKETIME=+0 x${scale}`];
      const wrap = [
        ...slowClock,
        'valgrind',
        '--tool=callgrind',
        '--smc-check=all-non-file',
        '--instr-atstart=no',
        `--callgrind-out-file=${path.join(dumps, `${stem}.%p`)}`,
      ];
      const target = await spec.start({
        upstreamUrl,
        tmp,
        cpus: pin?.proxy,
        loadPool: { connections: CONCURRENCY },
        wrap,
        timeoutMs: 300_000,
        tag: stem,
        // Every code object in the perf map, regular expressions and stubs too (not only functions); the
        // V8 log the flag also starts goes to the temp dir, not isolate-*.log files in the checkout.
        nodeFlags: JIT_NAMES ? ['--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${path.join(tmp, `${stem}-v8.log`)}`] : [],
      });
      const t0 = Date.now();
      await runLoad(target, mode, WARMUP, CONCURRENCY);
      const rounds = [];
      for (let r = 1; r <= ROUNDS; r++) {
        control(target.child.pid, '-z');
        control(target.child.pid, '-i', 'on');
        const { elapsedMs } = await runLoad(target, mode, REQUESTS, CONCURRENCY);
        control(target.child.pid, '-i', 'off');
        control(target.child.pid, '-d');
        const { file, total, turbofan, gc } = await roundCounts(dumps, stem, target.child.pid, r);
        let byArea;
        if (JIT_NAMES) {
          nameJitCode(file, `/tmp/perf-${target.child.pid}.map`, `${file}.named`);
          byArea = selfByArea(`${file}.named`, root).byArea;
        }
        // The rate the proxy saw, by its own (slowed) clock.
        const seen = REQUESTS / ((elapsedMs * scale) / 1000);
        rounds.push({
          all: total / REQUESTS,
          turbofan: turbofan / REQUESTS,
          rest: (total - turbofan) / REQUESTS,
          gc: gc / REQUESTS,
          code: (total - turbofan - gc) / REQUESTS,
          seen,
          byArea,
        });
      }
      const check = target.ledgerCheck ? await target.ledgerCheck() : undefined;
      await stopChild(target.child, 60_000);
      const m = {
        all: median(rounds.map((r) => r.all)),
        turbofan: median(rounds.map((r) => r.turbofan)),
        rest: median(rounds.map((r) => r.rest)),
        gc: median(rounds.map((r) => r.gc)),
        code: median(rounds.map((r) => r.code)),
        seen: median(rounds.map((r) => r.seen)),
      };
      if (spec.id === 'bare') bare = m;
      if (JIT_NAMES) {
        // The areas of the round whose rest is the median (one round: an area's figures add up to its total).
        const mid = [...rounds].sort((a, b) => a.rest - b.rest)[(rounds.length - 1) >> 1];
        areas.push({ mode, proxy: spec.id, byArea: mid.byArea });
      }
      const each = (k) => rounds.map((r) => fmt(r[k])).join(' / ');
      const spread = (k) => {
        const xs = rounds.map((r) => r[k]);
        return `${fmt(((Math.max(...xs) - Math.min(...xs)) / m[k]) * 100, 1)}%`;
      };
      rows.push([
        mode,
        spec.id,
        fmt(m.all),
        fmt(m.turbofan),
        fmt(m.rest),
        each('rest'),
        spread('rest'),
        `${(m.all / bare.all).toFixed(2)}×`,
        `${(m.rest / bare.rest).toFixed(2)}×`,
        fmt(m.gc),
        fmt(m.code),
        each('code'),
        spread('code'),
        `${(m.code / bare.code).toFixed(2)}×`,
        fmt(m.seen),
        check ? (check.ok ? 'OK' : 'MISMATCH') : '–',
        `${fmt((Date.now() - t0) / 1000)} s`,
      ]);
      process.stdout.write(
        `  ${mode} ${spec.id}: ${fmt(m.all)} instructions a request (${each('all')}), ${fmt(m.turbofan)} of them TurboFan's (${each('turbofan')})\n`,
      );
      if (check) {
        ledger.push(`ledger check (${mode}, ${spec.id}): ${check.text} ${check.ok ? 'OK' : 'MISMATCH'}`);
        if (!check.ok) process.exitCode = 1;
      }
    }
  }
  process.stdout.write('\n');
  printRows(rows);
  if (opt.markdown) printMarkdown(rows);
  for (const mode of MODES)
    printAreas(
      mode,
      areas.filter((a) => a.mode === mode),
    );
  process.stdout.write(`\n${ledger.join('\n')}\n`);
} catch (err) {
  process.stderr.write(`instructions: ${err.stack ?? err}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
}
