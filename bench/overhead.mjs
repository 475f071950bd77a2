#!/usr/bin/env node
// Tollgate against the alternatives, in one run (see bench/README.md).
//
// Starts, all on 127.0.0.1: a fast fake upstream (bench/fake-upstream.mjs) and, in front of it, the
// bare undici pass-through (bench/bare-proxy.mjs), the floor (bench/floor-proxy.mjs: the same, parsing
// and rewriting what it relays, as any gateway that charges must), nginx proxy_pass (when installed), Portkey's
// gateway (@portkey-ai/gateway, a devDependency) and Tollgate (node dist/cli.js serve) in each
// deployment (sqlite; postgres-redis when PostgreSQL and Redis answer), with a paid model (every check
// active) and with a `:free` model (free-model limits checked and counted on every request). Then, for
// JSON and for SSE answers:
//   1. throughput: interleaved rounds of a fixed number of requests at a fixed concurrency through each
//      proxy (the order alternates between rounds), reading each proxy's CPU time before and after;
//   2. latency: an open loop at half of Tollgate's measured peak, through the bare proxy and Tollgate;
//   3. the ledger check: every request sent to a Tollgate was charged exactly (free: counted).
// Prints one table (requests/s, p50, p99, CPU µs per request, ratio to bare, the issue's targets),
// the latency table and the ledger checks. Stops every process it started, by PID.
//
// --soak runs the soak instead (bench/lib/soak.mjs): many concurrent slow streams through Tollgate,
// sampling its RSS and event-loop delay.
//
// Options: bench/README.md, or the table `options` below.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFlagsOf, nodeFlagsOption, parseOptions, warmupMsOf, warmupSecondsOption } from './lib/cli-options.mjs';
import { NCPU, dumpChildren, installExitHandlers, onStopAll, pinning, startChild, stopAll, stopChild } from './lib/children.mjs';
import { CLK_TCK, serversCpuReading, serversCpuSpent } from './lib/cpu.mjs';
import { runLoad, runOpenLoop, warmUp } from './lib/load.mjs';
import { findPerf, printPerfRuns, recordPerf } from './lib/perf.mjs';
import { fmt, median, percentile, printMarkdown, printRows, profileReport, sortedLatencies } from './lib/report.mjs';
import { sharedStores, sharedStoresUnreachable } from './lib/stores.mjs';
import { LATENCY_TARGET_MS, TARGETS, cpuVerdict, disturbedRounds, latencyVerdict } from './lib/verdicts.mjs';
import {
  BENCH_CREDITS,
  CLI,
  PORTKEY,
  benchDir,
  START_NODE_FLAGS,
  findNginx,
  root,
  startBare,
  startFloor,
  startFloorOnFastify,
  startNginx,
  startPortkey,
  startTollgate,
} from './lib/targets.mjs';

const options = {
  requests: { type: 'string', default: '3000' },
  warmup: { type: 'string', default: '20000' },
  // and for at least this long (s; default: the settlement window and 2 s more)
  ...warmupSecondsOption,
  // Issue 9 measured its table with 32 connections (wrk); 16 until 2026-11-28. PostgreSQL + Redis is
  // bound by its commit's latency, not its CPU: at 16 it was 0.38–0.61 busy, each wake-up serving few requests.
  concurrency: { type: 'string', default: '32' },
  rounds: { type: 'string', default: '3' },
  modes: { type: 'string', default: 'json,sse' },
  proxies: { type: 'string', default: 'floor,nginx,portkey,tollgate,free' },
  deployments: { type: 'string', default: 'sqlite,postgres-redis' },
  'latency-s': { type: 'string', default: '3' },
  'latency-rounds': { type: 'string', default: '2' },
  'settle-ms': { type: 'string', default: '150' },
  json: { type: 'string' },
  markdown: { type: 'boolean', default: false },
  profile: { type: 'string' },
  perf: { type: 'string' },
  pin: { type: 'string', default: 'auto' },
  'window-ms': { type: 'string', default: '5000' },
  baseline: { type: 'string' },
  'deadline-s': { type: 'string' },
  nginx: { type: 'string' },
  'database-url': { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  'redis-url': { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  // soak (bench/lib/soak.mjs)
  soak: { type: 'boolean', default: false },
  'soak-streams': { type: 'string', default: '1000' },
  'soak-s': { type: 'string', default: '60' },
  'soak-chunk-ms': { type: 'string', default: '500' },
  'soak-chunks': { type: 'string', default: '20' },
  'soak-sample-s': { type: 'string', default: '5' },
  ...nodeFlagsOption,
};
const opt = parseOptions('overhead', options);
const EXTRA_NODE_FLAGS = nodeFlagsOf(opt);

function die(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}
function num(name, { min = 0, max = Infinity, integer = true } = {}) {
  const n = Number(opt[name]);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max)
    die(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${min}${max === Infinity ? '' : ` to ${max}`}`);
  return n;
}
const list = (name, allowed) => {
  const xs = opt[name]
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = xs.filter((x) => !allowed.includes(x));
  if (bad.length) die(`--${name} takes ${allowed.join(', ')} (comma-separated); not ${bad.join(', ')}`);
  return xs;
};

const DEPLOYMENTS = list('deployments', ['sqlite', 'postgres-redis']);
if (!['auto', 'on', 'off'].includes(opt.pin)) die('--pin takes auto, on or off');
// Tollgate's settlement window for the bench account. The budget holds each answer's cost for the
// window; at 60 s (Tollgate's default) a host answering ~3,000 requests a second settles more within it
// than any prepaid account below the in-flight threshold (100 credits) may hold in flight, and Tollgate
// rightly answers 402 (2026-11-27). 5 s keeps the budget checked on every request without refusing.
const WINDOW_MS = num('window-ms');
const BASELINE = opt.baseline === undefined ? undefined : path.resolve(opt.baseline);
if (BASELINE && !existsSync(path.join(BASELINE, 'dist', 'cli.js'))) die(`--baseline ${BASELINE}: no dist/cli.js there (a checkout, built with npm run build)`);
if (!existsSync(CLI)) die('dist/cli.js is missing: run `npm run build` first (`npm run bench` does)');
const PIN = pinning(opt.pin, die);
const stores = { databaseUrl: opt['database-url'], redisUrl: opt['redis-url'] };
installExitHandlers();

if (opt.soak) {
  const { soak } = await import('./lib/soak.mjs');
  const code = await soak({
    streams: num('soak-streams', { min: 1, max: 5000 }),
    seconds: num('soak-s', { min: 1, max: 600, integer: false }),
    chunkMs: num('soak-chunk-ms', { min: 1, max: 10_000 }),
    chunks: num('soak-chunks', { min: 1, max: 1000 }),
    sampleS: num('soak-sample-s', { min: 0.2, max: 60, integer: false }),
    deployments: DEPLOYMENTS,
    deadlineS: opt['deadline-s'] === undefined ? undefined : num('deadline-s', { min: 1 }),
    pin: PIN,
    stores,
    json: opt.json,
    markdown: opt.markdown,
    windowMs: WINDOW_MS,
    nodeFlags: EXTRA_NODE_FLAGS,
  }).catch(async (err) => {
    process.stderr.write(`bench: ${err.stack ?? err}\n`);
    if (err.output) process.stderr.write(`--- child output ---\n${err.output}\n`);
    dumpChildren();
    await stopAll();
    return 1;
  });
  process.exit(code);
}

const REQUESTS = num('requests', { min: 1 });
const WARMUP = num('warmup');
// Why a duration as well as a count: warmUp in lib/load.mjs (20,000 requests took ~4 s, less than the
// settlement window, and the JIT was ~4 % of a measured stream's CPU: perf, twentieth session).
const WARMUP_MS = warmupMsOf(opt, die);
const CONCURRENCY = num('concurrency', { min: 1, max: 1000 });
const ROUNDS = num('rounds', { min: 1 });
const MODES = list('modes', ['json', 'sse']);
const PROXIES = new Set(list('proxies', ['floor', 'floor-fastify', 'nginx', 'portkey', 'tollgate', 'free']));
const LATENCY_S = num('latency-s', { max: 600, integer: false });
const LATENCY_ROUNDS = num('latency-rounds', { min: 1, max: 20 });
const DEADLINE_S = opt['deadline-s'] === undefined ? 1500 : num('deadline-s', { min: 1 });
const SETTLE_MS = num('settle-ms', { max: 5000 });

// The load generator's connections: one per worker; a request that hangs fails the run after 10 s.
const LOAD_POOL = { connections: CONCURRENCY, headersTimeout: 10_000, bodyTimeout: 10_000 };
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** The postgres-redis deployment's servers, by process name, whose CPU is measured beside Tollgate's. */
const SERVERS = ['postgres', 'redis-server'];

async function measure(target, mode, perfDir) {
  await pause(SETTLE_MS); // let deferred work of what ran before (charges, GC) finish outside the window
  // --perf: this turn of the process recorded, from before its load to after its deferred work.
  const perfFile =
    perfDir && target.perf ? path.join(perfDir, `${mode}-${target.id.replaceAll(':', '-')}-round${(target.perfFiles ??= []).length + 1}.data`) : undefined;
  const recording = perfFile && (await recordPerf(target.child.pid, perfFile));
  const from = process.hrtime.bigint() / 1000n; // µs on the clock a .cpuprofile's sample times are on
  const servers = target.deployment === 'postgres-redis' ? SERVERS : undefined;
  const serversBefore = servers && serversCpuReading(servers);
  const before = await target.cpu();
  const { elapsedMs, latencies } = await runLoad(target, mode, REQUESTS, CONCURRENCY);
  await pause(SETTLE_MS); // deferred work of the measured requests (group-committed charges) counts
  const after = await target.cpu();
  if (recording) {
    await recording.stop();
    target.perfFiles.push(perfFile);
  }
  // What PostgreSQL's and Redis's processes spent meanwhile (the machine's other work is theirs too: run nothing else).
  const serversUs = servers && serversCpuSpent(serversBefore, serversCpuReading(servers));
  (target.windows ??= []).push({ from, to: process.hrtime.bigint() / 1000n, requests: REQUESTS });
  // System time (the kernel's share: sockets, pwrite) where the probe tells it apart (Node proxies).
  const sysUs = after.sysUs === undefined ? undefined : after.sysUs - before.sysUs;
  await target.creditBack?.(REQUESTS); // outside the measured span: what the round spent goes back on the balance
  return { cpuUs: after.us - before.us, sysUs, procCpuUs: after.procUs - before.procUs, serversUs, elapsedMs, latencies };
}

function summarize(runs) {
  const all = sortedLatencies(runs);
  const cpuPerReq = runs.map((r) => r.cpuUs / REQUESTS);
  return {
    requests_per_round: REQUESTS,
    rounds: runs.length,
    rps: median(runs.map((r) => (REQUESTS * 1000) / r.elapsedMs)),
    cpu_us_per_req: median(cpuPerReq),
    cpu_us_per_req_rounds: cpuPerReq,
    proc_cpu_us_per_req: median(runs.map((r) => r.procCpuUs / REQUESTS)),
    // the kernel's part of cpu_us_per_req (system time); null where it is not told apart (nginx)
    sys_us_per_req: runs.every((r) => r.sysUs !== undefined) ? median(runs.map((r) => r.sysUs / REQUESTS)) : null,
    // CPU-seconds per wall-second of the proxy: 1.0 means it kept one core busy
    busy: median(runs.map((r) => r.cpuUs / 1000 / r.elapsedMs)),
    // postgres-redis: what PostgreSQL and Redis spent a request (every process of each on this machine)
    servers_us_per_req: runs[0].serversUs
      ? Object.fromEntries(Object.keys(runs[0].serversUs).map((k) => [k, median(runs.map((r) => r.serversUs[k] / REQUESTS))]))
      : undefined,
    p50_ms: percentile(all, 50),
    p99_ms: percentile(all, 99),
  };
}

/** Every proxy of one mode, started fresh (own ledgers, empty hold stores), in parallel. */
async function startTargets(mode, ctx) {
  const common = { upstreamUrl: ctx.upstreamUrl, tmp: ctx.tmp, cpus: PIN?.proxy, loadPool: LOAD_POOL };
  const perf = Boolean(ctx.perfDir);
  const jobs = [['bare', () => startBare({ ...common, profileDir: ctx.profileDir, tag: mode, perf })]];
  if (PROXIES.has('floor')) jobs.push(['floor', () => startFloor({ ...common, profileDir: ctx.profileDir, tag: mode, perf })]);
  if (PROXIES.has('floor-fastify')) jobs.push(['floor-fastify', () => startFloorOnFastify({ ...common, profileDir: ctx.profileDir, tag: mode, perf })]);
  if (ctx.nginx) jobs.push(['nginx', () => startNginx({ ...common, binary: ctx.nginx })]);
  if (ctx.portkey) jobs.push(['portkey', () => startPortkey(common)]);
  for (const deployment of ctx.deployments) {
    // The paid row, the free row, and (--baseline) the paid row of another build.
    const variants = [{ free: false }, { free: true }, ...(BASELINE ? [{ free: false, baseline: BASELINE }] : [])];
    for (const { free, baseline } of variants) {
      if (!PROXIES.has(free ? 'free' : 'tollgate')) continue;
      jobs.push([
        `tollgate:${deployment}${free ? ':free' : ''}${baseline ? ':baseline' : ''}`,
        async () => {
          let store;
          if (deployment === 'postgres-redis') {
            store = await sharedStores(stores, `${mode}_${free ? 'free' : 'paid'}${baseline ? '_baseline' : ''}`);
            onStopAll(store.drop);
          }
          return startTollgate({
            ...common,
            deployment,
            free,
            baseline,
            store,
            windowMs: WINDOW_MS,
            profileDir: ctx.profileDir,
            tag: mode,
            perf,
            nodeFlags: baseline ? [] : EXTRA_NODE_FLAGS,
          });
        },
      ]);
    }
  }
  const settled = await Promise.allSettled(jobs.map(([, start]) => start()));
  const targets = [];
  for (const [i, s] of settled.entries()) {
    const [id] = jobs[i];
    if (s.status === 'fulfilled') targets.push(s.value);
    else if (id === 'nginx' || id === 'portkey') ctx.note(`${mode}: ${id} did not start, so it is left out: ${s.reason.message.split('\n')[0]}`);
    else throw s.reason;
  }
  return targets;
}

async function closeTarget(t) {
  await Promise.all([t.pool, t.latencyPool].filter(Boolean).map((p) => p.destroy().catch(() => undefined)));
  await stopChild(t.child);
}

function ratioCell(r) {
  return r.target === undefined ? '' : `≤ ${r.target}×: ${r.verdict}`;
}

function printTable(results, markdown) {
  const head = ['mode', 'proxy', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', '(per round)', 'busy', '× bare', '(per round)', 'of it kernel', 'target'];
  const rows = [head];
  for (const [mode, byTarget] of Object.entries(results)) {
    for (const r of Object.values(byTarget)) {
      rows.push([
        mode,
        r.label,
        fmt(r.rps),
        fmt(r.p50_ms, 2),
        fmt(r.p99_ms, 2),
        fmt(r.cpu_us_per_req),
        r.cpu_us_per_req_rounds.map((x) => fmt(x)).join(' / '),
        fmt(r.busy, 2),
        `${fmt(r.ratio, 2)}×`,
        r.ratio_rounds.map((x) => `${fmt(x, 2)}×`).join(' / '),
        r.sys_us_per_req === null ? '–' : `${fmt(r.sys_us_per_req)} µs`,
        ratioCell(r),
      ]);
    }
  }
  printRows(rows);
  if (markdown) printMarkdown(rows);
  const withServers = Object.entries(results).flatMap(([mode, byTarget]) =>
    Object.values(byTarget)
      .filter((r) => r.servers_us_per_req)
      .map((r) => [mode, r]),
  );
  if (withServers.length) {
    process.stdout.write("\nthe servers' CPU, µs a request (not in Tollgate's column above; every postgres and redis-server process on this machine):\n");
    const bareOf = (mode) => results[mode].bare.cpu_us_per_req;
    const srows = [['mode', 'proxy', 'PostgreSQL', 'Redis', 'Tollgate + servers', '× bare']];
    for (const [mode, r] of withServers) {
      const pgUs = r.servers_us_per_req.postgres;
      const redisUs = r.servers_us_per_req['redis-server'];
      const total = r.cpu_us_per_req + pgUs + redisUs;
      srows.push([mode, r.label, fmt(pgUs), fmt(redisUs), fmt(total), `${fmt(total / bareOf(mode), 2)}×`]);
    }
    printRows(srows);
    if (markdown) printMarkdown(srows);
  }
}

function printLatency(latency, markdown) {
  const head = [
    'mode',
    'deployment',
    'rate/s',
    'bare p50',
    'bare p99',
    'tollgate p50',
    'tollgate p99',
    'added p50',
    'added p99',
    `target ≤ ${LATENCY_TARGET_MS} ms`,
    'tollgate busy',
    'tollgate µs/req',
  ];
  const rows = [head];
  for (const l of latency) {
    rows.push([
      l.mode,
      l.deployment,
      fmt(l.rate),
      fmt(l.bare.p50_ms, 2),
      fmt(l.bare.p99_ms, 2),
      fmt(l.tollgate.p50_ms, 2),
      fmt(l.tollgate.p99_ms, 2),
      fmt(l.added_p50_ms, 2),
      fmt(l.added_p99_ms, 2),
      l.verdict,
      fmt(l.tollgate.busy, 2),
      fmt(l.tollgate.cpu_us_per_req),
    ]);
  }
  printRows(rows);
  if (markdown) printMarkdown(rows);
}

async function main() {
  const tmp = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  onStopAll(() => rmSync(tmp, { recursive: true, force: true }));
  const deadline = setTimeout(() => {
    process.stderr.write(`bench: over the ${DEADLINE_S} s deadline; stopping\n`);
    stopAll().finally(() => process.exit(1));
  }, DEADLINE_S * 1000);
  deadline.unref();

  const notes = [];
  const note = (text) => {
    notes.push(text);
    process.stdout.write(`note: ${text}\n`);
  };
  const ctx = { tmp, note, profileDir: opt.profile ? path.resolve(opt.profile) : undefined, perfDir: opt.perf ? path.resolve(opt.perf) : undefined };
  if (ctx.perfDir) {
    const perf = findPerf();
    if (!perf.ok) {
      process.stderr.write(`bench: ${perf.message}\n`);
      process.exit(2);
    }
    mkdirSync(ctx.perfDir, { recursive: true });
  }
  if (PROXIES.has('nginx')) {
    ctx.nginx = findNginx(opt.nginx);
    if (!ctx.nginx) note(`nginx is not installed${opt.nginx ? ` at ${opt.nginx}` : ''}, so its rows are skipped (Debian: apt-get install nginx-light)`);
  }
  if (PROXIES.has('portkey')) {
    ctx.portkey = existsSync(PORTKEY);
    if (!ctx.portkey) note("Portkey's gateway is not installed (node_modules/@portkey-ai/gateway: `npm ci` installs it), so its rows are skipped");
  }
  ctx.deployments = [];
  if (PROXIES.has('tollgate') || PROXIES.has('free')) {
    for (const d of DEPLOYMENTS) {
      const why = d === 'postgres-redis' ? await sharedStoresUnreachable(stores) : undefined;
      if (why) note(`the postgres-redis deployment is skipped: ${why} (set --database-url / --redis-url, or DATABASE_URL / REDIS_URL)`);
      else ctx.deployments.push(d);
    }
  }
  const ncpu = NCPU;
  const cpuModel = cpus()[0]?.model ?? 'unknown CPU';

  const results = {};
  const latency = [];
  const ledger = [];
  const profiles = [];
  const perfRuns = [];
  try {
    const { match: up } = await startChild('fake upstream', process.execPath, [path.join(benchDir, 'fake-upstream.mjs')], {
      ready: /listening (\d+)/,
      cpus: PIN?.others,
      cwd: root,
    });
    ctx.upstreamUrl = `http://127.0.0.1:${up[1]}`;

    process.stdout.write(
      `Tollgate against a bare undici pass-through, nginx and Portkey — ${new Date().toISOString()}\n` +
        `node ${process.version}, ${ncpu} CPUs (${cpuModel}); per mode: ${WARMUP} warm-up requests per proxy${WARMUP > 0 && WARMUP_MS > 0 ? ` lasting at least ${fmt(WARMUP_MS / 1000, 1)} s` : ''}, then ${ROUNDS} interleaved ` +
        `round(s) of ${REQUESTS} requests per proxy, concurrency ${CONCURRENCY}; latency: open loop at half of Tollgate's peak, ` +
        `${LATENCY_ROUNDS} × ${LATENCY_S} s per proxy\n` +
        (PIN ? `pinned: proxies on CPU ${PIN.proxy}, load generator and fake upstream on CPU ${PIN.others}\n` : 'not pinned to CPUs\n') +
        `Node proxies run with npm start's flags: ${START_NODE_FLAGS.join(' ') || 'none'}` +
        (EXTRA_NODE_FLAGS.length > 0 ? `; this build's Tollgate also with ${EXTRA_NODE_FLAGS.join(' ')}\n` : '\n') +
        `Tollgate (fresh per mode): prepaid account with ${BENCH_CREDITS} credits (in-flight budget applies; credited back what it spends), key limit 10,000/day, settlement window ` +
        `${WINDOW_MS} ms; paid model, and a :free model with the free-model limits counted; deployments: ${ctx.deployments.join(', ') || 'none'}\n` +
        (opt.profile ? 'NOTE: --profile is on: Tollgate and the bare proxy run under the CPU profiler, their numbers are inflated.\n' : '') +
        (opt.perf
          ? 'NOTE: --perf is on: the measured turns of Tollgate and the bare proxy are recorded by perf (4,000 samples a second with stacks), which costs them a little.\n'
          : '') +
        '\n',
    );

    for (const mode of MODES) {
      const targets = await startTargets(mode, ctx);
      const runs = new Map(targets.map((t) => [t, []]));
      try {
        // Warm-up, once per proxy: lets V8 (and nginx's caches) settle before anything is measured.
        for (const t of targets) await warmUp(t, mode, { requests: WARMUP, ms: WARMUP_MS, concurrency: CONCURRENCY });
        for (let round = 0; round < ROUNDS; round++) {
          // Alternate the order between rounds, so drift does not favour one side.
          const order = round % 2 === 0 ? targets : [...targets].reverse();
          for (const t of order) runs.get(t).push(await measure(t, mode, ctx.perfDir));
        }
        const bare = targets.find((t) => t.id === 'bare');
        const bareRuns = runs.get(bare);
        const bareSummary = summarize(bareRuns);
        // Rounds whose bare figure was disturbed: a proxy doing all it does and more read under it.
        const leftOut = disturbedRounds(
          targets.filter((t) => t.id === 'floor' || t.kind === 'tollgate').map((t) => runs.get(t)),
          bareRuns,
        );
        results[mode] = {};
        for (const t of targets) {
          const s = summarize(runs.get(t));
          const ratioRounds = runs.get(t).map((r, i) => r.cpuUs / bareRuns[i].cpuUs);
          const target = t.kind === 'tollgate' && !t.free && !t.baseline ? TARGETS[t.deployment][mode] : undefined;
          results[mode][t.id] = {
            label: t.label,
            ...s,
            ratio: s.cpu_us_per_req / bareSummary.cpu_us_per_req,
            ratio_rounds: ratioRounds,
            target,
            verdict: cpuVerdict(ratioRounds, target, leftOut),
            ...(target === undefined ? {} : { rounds_left_out: leftOut.map((i) => i + 1) }),
          };
        }

        // Latency: an open loop at half of each Tollgate's peak (its closed-loop req/s above), through it and the bare proxy.
        if (LATENCY_S > 0) {
          for (const tg of targets.filter((t) => t.kind === 'tollgate' && !t.free && !t.baseline)) {
            const rate = results[mode][tg.id].rps / 2;
            const got = { bare: [], tollgate: [] };
            let behindMs = 0;
            for (let round = 0; round < LATENCY_ROUNDS; round++) {
              for (const [name, t] of round % 2 === 0
                ? [
                    ['bare', bare],
                    ['tollgate', tg],
                  ]
                : [
                    ['tollgate', tg],
                    ['bare', bare],
                  ]) {
                const before = await t.cpu();
                const r = await runOpenLoop(t, mode, rate, LATENCY_S);
                r.cpuUs = (await t.cpu()).us - before.us;
                await t.creditBack?.(r.latencies.length);
                behindMs = Math.max(behindMs, r.behindMs);
                got[name].push(r);
              }
            }
            const stat = (rs) => {
              const all = sortedLatencies(rs);
              const cpuUs = rs.reduce((a, r) => a + r.cpuUs, 0);
              const ms = rs.reduce((a, r) => a + r.elapsedMs, 0);
              return {
                requests: all.length,
                p50_ms: percentile(all, 50),
                p99_ms: percentile(all, 99),
                cpu_us_per_req: cpuUs / all.length,
                // share of a core the proxy used at this rate: near 1, it was saturated and its latency is queueing
                busy: cpuUs / 1000 / ms,
              };
            };
            const b = stat(got.bare);
            const t = stat(got.tollgate);
            const l = {
              mode,
              deployment: tg.deployment,
              rate,
              seconds: LATENCY_S * LATENCY_ROUNDS,
              generator_behind_ms: behindMs,
              bare: b,
              tollgate: t,
              added_p50_ms: t.p50_ms - b.p50_ms,
              added_p99_ms: t.p99_ms - b.p99_ms,
            };
            latency.push({ ...l, verdict: latencyVerdict(l) });
          }
        }

        // Ledger: every request sent to each Tollgate was charged exactly (paid) or counted (free).
        await pause(200);
        for (const t of targets.filter((x) => x.kind === 'tollgate')) ledger.push({ mode, label: t.label, ...(await t.ledgerCheck()) });
      } finally {
        await Promise.all(targets.map(closeTarget));
        for (const t of targets) if (t.profile) profiles.push({ mode, label: t.label, bare: t.id === 'bare', file: t.profile, windows: t.windows ?? [] });
        for (const t of targets)
          if (t.perfFiles?.length) perfRuns.push({ mode, label: t.label, bare: t.id === 'bare', files: t.perfFiles, requests: t.perfFiles.length * REQUESTS });
      }
    }

    process.stdout.write('\n');
    printTable(results, opt.markdown);
    if (latency.length) {
      process.stdout.write("\nlatency, open loop at half of Tollgate's peak req/s (ms, request sent to last byte read; added = tollgate − bare):\n");
      printLatency(latency, opt.markdown);
      const behind = Math.max(...latency.map((l) => l.generator_behind_ms));
      if (behind > 5) process.stdout.write(`warning: the load generator fell up to ${fmt(behind, 1)} ms behind its schedule\n`);
    }
    process.stdout.write('\n');
    for (const l of ledger) {
      if (!l.ok) process.exitCode = 1;
      process.stdout.write(`ledger check (${l.mode}, ${l.label}): ${l.text} ${l.ok ? 'OK' : 'MISMATCH'}\n`);
    }
    const mismatch = Object.entries(results).flatMap(([mode, byTarget]) =>
      Object.values(byTarget)
        .filter((r) => Math.abs(r.proc_cpu_us_per_req - r.cpu_us_per_req) * REQUESTS > 2 * (1e6 / CLK_TCK) + 0.05 * r.cpu_us_per_req * REQUESTS)
        .map((r) => `${mode} ${r.label}`),
    );
    if (mismatch.length) process.stdout.write(`warning: /proc/PID/stat and the precise CPU reading disagree for ${mismatch.join(', ')}\n`);
    for (const n of notes) process.stdout.write(`note: ${n}\n`);

    if (opt.json) {
      const out = {
        date: new Date().toISOString(),
        node: process.version,
        cpus: ncpu,
        cpu: cpuModel,
        pinned: Boolean(PIN),
        window_ms: WINDOW_MS,
        requests: REQUESTS,
        warmup: WARMUP,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        results,
        latency,
        ledger,
        notes,
      };
      writeFileSync(opt.json, `${JSON.stringify(out, null, 2)}\n`);
      process.stdout.write(`results written to ${opt.json}\n`);
    }
  } finally {
    clearTimeout(deadline);
    await stopAll();
  }
  process.stdout.write(profileReport(profiles, root));
  await printPerfRuns(perfRuns, root);
}

main().catch(async (err) => {
  process.stderr.write(`bench: ${err.stack ?? err}\n`);
  if (err.output) process.stderr.write(`--- child output ---\n${err.output}\n`);
  dumpChildren();
  await stopAll();
  process.exit(1);
});
