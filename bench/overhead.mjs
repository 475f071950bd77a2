#!/usr/bin/env node
// CPU overhead of Tollgate against a bare undici pass-through, in one run (see bench/README.md).
//
// Starts, all on 127.0.0.1: a fast fake upstream (bench/fake-upstream.mjs), the bare proxy
// (bench/bare-proxy.mjs) and Tollgate (node dist/cli.js serve) with every check active. Then, for
// JSON and for SSE answers, sends a fixed number of requests at a fixed concurrency through each
// proxy and reads the proxy process's CPU time (user + system) before and after. Prints requests/s,
// CPU µs per request, the Tollgate/bare ratio and p50/p99 latency. Stops every process it started.
//
// Options (bench/README.md): --requests N (3000)  --warmup N (2000)  --concurrency N (16)  --rounds N (3)
//   --modes json,sse  --json FILE  --profile DIR  --pin auto|on|off  --window-ms N  --deadline-s N (240)
//   --deployments sqlite,postgres-redis (both; postgres-redis is skipped with a note when PostgreSQL or
//   Redis does not answer)  --database-url URL ($DATABASE_URL or the local server)  --redis-url URL ($REDIS_URL or the local one)
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const { values: opt } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'json,sse' },
    json: { type: 'string' },
    profile: { type: 'string' },
    pin: { type: 'string', default: 'auto' },
    'window-ms': { type: 'string' },
    'deadline-s': { type: 'string', default: '240' },
    deployments: { type: 'string', default: 'sqlite,postgres-redis' },
    'database-url': { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    'redis-url': { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  },
});
const REQUESTS = positiveInt('requests');
const WARMUP = positiveInt('warmup', true);
const CONCURRENCY = positiveInt('concurrency');
const ROUNDS = positiveInt('rounds');
const MODES = opt.modes.split(',').map((m) => m.trim());
const DEPLOYMENTS = opt.deployments.split(',').map((d) => d.trim());
if (DEPLOYMENTS.some((d) => d !== 'sqlite' && d !== 'postgres-redis')) die('--deployments takes sqlite, postgres-redis or both');
if (MODES.some((m) => m !== 'json' && m !== 'sse')) die('--modes takes json, sse or json,sse');
if (!['auto', 'on', 'off'].includes(opt.pin)) die('--pin takes auto, on or off');
const WINDOW_MS = opt['window-ms'] === undefined ? undefined : Number(opt['window-ms']);
if (WINDOW_MS !== undefined && !(Number.isInteger(WINDOW_MS) && WINDOW_MS >= 0)) die('--window-ms must be a non-negative integer');
const PROXY_CONNECTIONS = 128; // upstream keep-alive pool size, the same for both proxies (Tollgate's default)

function positiveInt(name, zeroOk = false) {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) die(`--${name} must be a ${zeroOk ? 'non-negative' : 'positive'} integer`);
  return n;
}
function die(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

const CLI = path.join(root, 'dist', 'cli.js');
if (!existsSync(CLI)) die('dist/cli.js is missing: run `npm run build` first (`npm run bench` does)');

// CPU pinning: the measured proxy gets the last CPU to itself; the load generator (this process) and
// the fake upstream share the others. Without it the three processes compete for the cores and the
// proxy's CPU per request swings with how its work happens to be batched.
const NCPU = availableParallelism();
const PIN = (() => {
  if (opt.pin === 'off' || NCPU < 2) {
    if (opt.pin === 'on') die('--pin on needs at least 2 CPUs');
    return undefined;
  }
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    if (opt.pin === 'on') die('--pin on needs taskset (util-linux)');
    return undefined;
  }
  return { proxy: String(NCPU - 1), others: NCPU === 2 ? '0' : `0-${NCPU - 2}` };
})();
if (PIN) execFileSync('taskset', ['-a', '-c', '-p', PIN.others, String(process.pid)], { stdio: 'ignore' });

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked and stopped by its PID, whatever happens.

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
/** Every child started, for their last output when something fails. */
const started = [];

function startChild(name, args, ready, { ipc = false, cpus } = {}) {
  // taskset execs node in place, so the PID is node's.
  const [cmd, argv] = cpus ? ['taskset', ['-c', cpus, process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(cmd, argv, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  children.add(child);
  started.push(child);
  child.name = name;
  child.output = '';
  const keep = (d) => {
    child.output = (child.output + d).slice(-16_384);
  };
  child.stderr.on('data', keep);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 30 s`)), 30_000);
    const onExit = (code, signal) => fail(new Error(`${name} exited during start-up (code ${code}, signal ${signal})`));
    let settled = false;
    const fail = (err) => {
      settled = true;
      clearTimeout(timer);
      child.off('exit', onExit);
      reject(Object.assign(err, { output: child.output }));
    };
    child.once('exit', onExit);
    child.stdout.on('data', (d) => {
      keep(d);
      const m = settled ? null : ready.exec(child.output);
      if (m) {
        settled = true;
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve({ child, match: m });
      }
    });
  });
}

function running(child) {
  return child.exitCode === null && child.signalCode === null;
}

/** SIGTERM by PID, then SIGKILL after a grace period. */
async function stopChild(child, graceMs = 12_000) {
  if (running(child)) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const timer = new Promise((resolve) => setTimeout(resolve, graceMs, 'timeout'));
    if ((await Promise.race([exited, timer])) === 'timeout' && running(child)) {
      process.stderr.write(`bench: ${child.name} (pid ${child.pid}) ignored SIGTERM; killing it\n`);
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    }
  }
  children.delete(child);
}

/** The temp dir (config, SQLite ledger) of this run; removed on every way out. */
let tmp;

async function stopAll() {
  await Promise.all([...children].map((c) => stopChild(c)));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

// Last resort (an uncaught error, process.exit): no child outlives this process.
process.on('exit', () => {
  for (const c of children) {
    if (running(c)) {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    process.stderr.write(`bench: ${sig}, stopping\n`);
    stopAll().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// CPU time of a child: process.cpuUsage() through the preloaded probe (µs), and /proc (ticks) as a check.

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function procCpuUs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK; // utime + stime
}

function probeCpuUs(child) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.name}: no answer from the CPU probe`)), 5_000);
    child.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.cpu.user + m.cpu.system);
    });
    child.send('cpu');
  });
}

async function cpuOf(child) {
  const [probe, proc] = [await probeCpuUs(child), procCpuUs(child.pid)];
  return { probe, proc };
}

// ---------------------------------------------------------------------------------------------
// The load: CONCURRENCY workers on one undici Pool per target, each sending one request after another.

const prompt =
  'I am planning a three-day trip to Paris in early spring and would like some help. ' +
  'Please suggest an itinerary that balances museums, walking tours and good food, and keep travel ' +
  'between places short. I prefer quiet mornings, one big museum per day at most, and I would like ' +
  'at least one evening by the river. Tell me which neighbourhoods are best to stay in for this plan, ' +
  'roughly what a mid-range hotel costs there, and whether a museum pass is worth it for three days. ' +
  'If it rains on one of the days, what indoor alternatives would you recommend instead of the ' +
  'walking tour? Also list two or three bakeries or small restaurants near each stop, and one thing ' +
  'that most visitors miss but locals like. Keep the answer short and practical, with times of day.';
const bodyFor = (stream) =>
  Buffer.from(
    JSON.stringify({
      model: 'bench/paid',
      messages: [
        { role: 'system', content: 'You are a concise travel assistant.' },
        { role: 'user', content: prompt },
      ],
      temperature: 0.7,
      ...(stream ? { stream: true } : {}),
    }),
  );
const BODIES = { json: bodyFor(false), sse: bodyFor(true) };

function checkAnswer(target, mode, status, text) {
  const ok =
    status === 200 &&
    (mode === 'sse'
      ? text.endsWith('data: [DONE]\n\n') && text.includes('"usage"')
      : text.includes('"usage"') && (target.name === 'bare' || text.includes('"cost"')));
  if (!ok) throw new Error(`${target.name} ${mode}: unexpected answer ${status}: ${text.slice(0, 400)}`);
}

async function runLoad(target, mode, n) {
  const latencies = new Float64Array(n);
  const body = BODIES[mode];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const t0 = performance.now();
      const res = await target.pool.request({ method: 'POST', path: target.path, headers: target.headers, body });
      const text = await res.body.text();
      latencies[i] = performance.now() - t0;
      checkAnswer(target, mode, res.statusCode, text);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, worker));
  return { elapsedMs: performance.now() - t0, latencies };
}

// The load generator's connections: one per worker; a request that hangs fails the run after 10 s.
const LOAD_POOL = { connections: CONCURRENCY, headersTimeout: 10_000, bodyTimeout: 10_000 };

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function measure(target, mode) {
  await pause(150); // let deferred work of what ran before (charges, GC) finish outside the window
  const before = await cpuOf(target.child);
  const { elapsedMs, latencies } = await runLoad(target, mode, REQUESTS);
  await pause(150); // deferred work of the measured requests (group-committed charges) counts
  const after = await cpuOf(target.child);
  return {
    cpuUs: after.probe - before.probe,
    procCpuUs: after.proc - before.proc,
    elapsedMs,
    latencies,
  };
}

// ---------------------------------------------------------------------------------------------
// Tollgate's setup: config with every check active, then account, credits and key via the admin API.

function tollgateConfig(upstreamUrl, store, adminToken) {
  return `# generated by bench/overhead.mjs
listen: { host: 127.0.0.1, port: 0 }
database_url: ${store.databaseUrl}
${store.redisUrl ? `redis_url: ${store.redisUrl}\nredis_key_prefix: "${store.prefix}"\n` : ''}admin_token: ${adminToken}
secrets_key: ${randomBytes(32).toString('base64')}
log_level: warn
limits:
  ddos: { per_ip_per_second: 1000000 }
${WINDOW_MS === undefined ? '' : `  in_flight: { settlement_window_ms: ${WINDOW_MS} }\n`}providers:
  - id: fake
    type: openai
    base_url: ${upstreamUrl}/v1
    api_key: sk-fake-upstream-key
    connections: ${PROXY_CONNECTIONS}
models:
  - id: bench/paid
    context_length: 8192
    endpoints:
      - provider: fake
        model: fake-model
        pricing: { prompt: "0.000001", completion: "0.000002" }
`;
}

async function admin(base, token, method, route, body) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function setupTollgate(base, adminToken) {
  const { data: account } = await admin(base, adminToken, 'POST', '/api/v1/admin/accounts', { name: 'bench', type: 'prepaid' });
  // 50 credits: below balance_threshold (100), so the in-flight budget (min(0.5 × balance, 50)) applies.
  await admin(base, adminToken, 'POST', `/api/v1/admin/accounts/${account.id}/credits`, { amount: 50 });
  const { key } = await admin(base, adminToken, 'POST', `/api/v1/admin/accounts/${account.id}/keys`, {
    name: 'bench',
    limit: 40,
    limit_reset: 'daily',
  });
  const { data: shown } = await admin(base, adminToken, 'GET', `/api/v1/admin/accounts/${account.id}`);
  if (!shown.in_flight?.subject) throw new Error(`the in-flight budget does not apply to the bench account: ${JSON.stringify(shown)}`);
  return { accountId: account.id, key, inFlight: shown.in_flight };
}

// ---------------------------------------------------------------------------------------------
// Reporting

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function summarize(runs) {
  const all = Float64Array.from(runs.flatMap((r) => Array.from(r.latencies))).sort();
  const cpuPerReq = runs.map((r) => r.cpuUs / REQUESTS);
  return {
    requests_per_round: REQUESTS,
    rounds: runs.length,
    rps: median(runs.map((r) => (REQUESTS * 1000) / r.elapsedMs)),
    cpu_us_per_req: median(cpuPerReq),
    cpu_us_per_req_rounds: cpuPerReq,
    proc_cpu_us_per_req: median(runs.map((r) => r.procCpuUs / REQUESTS)),
    // CPU-seconds per wall-second of the proxy: 1.0 means it kept one core busy (it is single-threaded JS)
    busy: median(runs.map((r) => r.cpuUs / 1000 / r.elapsedMs)),
    p50_ms: percentile(all, 50),
    p99_ms: percentile(all, 99),
  };
}

const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

function printTable(results) {
  const rows = [['mode', 'proxy', 'req/s', 'CPU µs/req', '(per round)', 'busy', 'p50 ms', 'p99 ms']];
  for (const [key, result] of Object.entries(results)) {
    const [deployment, mode] = key.split('/');
    for (const name of ['bare', 'tollgate']) {
      const r = result[name];
      rows.push([
        mode,
        name === 'bare' ? 'bare' : `tollgate (${deployment})`,
        fmt(r.rps),
        fmt(r.cpu_us_per_req),
        r.cpu_us_per_req_rounds.map((x) => fmt(x)).join(' / '),
        fmt(r.busy, 2),
        fmt(r.p50_ms, 2),
        fmt(r.p99_ms, 2),
      ]);
    }
    rows.push([mode, 'ratio', '', `${fmt(result.ratio, 2)}×`, result.ratio_rounds.map((x) => `${fmt(x, 2)}×`).join(' / '), '', '', '']);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const [i, r] of rows.entries()) {
    process.stdout.write(`${r.map((c, j) => (j < 2 ? c.padEnd(widths[j]) : c.padStart(widths[j]))).join('  ')}\n`);
    if (i === 0) process.stdout.write(`${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  }
}

// ---------------------------------------------------------------------------------------------
// Profile summary (--profile): the top self-time functions of Tollgate's .cpuprofile.

function shortUrl(url) {
  if (!url) return '';
  const p = url.replace(/^file:\/\//, '');
  const nm = p.lastIndexOf('/node_modules/');
  if (nm >= 0) return p.slice(nm + '/node_modules/'.length);
  return p.startsWith(root) ? p.slice(root.length + 1) : p;
}

function area(url) {
  const u = shortUrl(url);
  if (!u) return '(native / VM)';
  if (u.startsWith('node:')) return 'node core';
  if (u.startsWith('dist/')) return `tollgate ${u.split('/').slice(0, 2).join('/').replace(/\.js$/, '')}`;
  const parts = u.split('/');
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

function summarizeProfile(file, top = 10) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < prof.samples.length; i++) {
    const node = byId.get(prof.samples[i]);
    self.set(node, (self.get(node) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  const byFn = new Map();
  const byArea = new Map();
  let total = 0;
  for (const [node, us] of self) {
    const cf = node.callFrame;
    if (cf.functionName === '(idle)') continue;
    total += us;
    const k = `${cf.functionName || '(anonymous)'}  ${shortUrl(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
    byFn.set(k, (byFn.get(k) ?? 0) + us);
    const a = cf.url ? area(cf.url) : cf.functionName;
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const list = (m, n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${pct(us)}  ${fmt(us / 1000).padStart(6)} ms  ${k}`)
      .join('\n');
  return (
    `profile ${file}: ${fmt(total / 1000)} ms of CPU samples (idle excluded)\n` +
    `top ${top} functions by self time:\n${list(byFn, top)}\n` +
    `self time by area:\n${list(byArea, 15)}\n`
  );
}

// ---------------------------------------------------------------------------------------------

/**
 * A PostgreSQL database and a Redis key prefix of this run's own (postgres-redis deployment), dropped
 * when the run ends. pg and ioredis are the gateway's own dependencies.
 */
async function sharedStores(mode) {
  const { default: pg } = await import('pg');
  const { Redis } = await import('ioredis');
  const name = `tollgate_bench_${mode}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: opt['database-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(opt['database-url']);
  url.pathname = `/${name}`;
  const prefix = `tollgate-bench:${randomBytes(4).toString('hex')}:`;
  return {
    databaseUrl: url.toString(),
    redisUrl: opt['redis-url'],
    prefix,
    async drop() {
      const c = new pg.Client({ connectionString: opt['database-url'] });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      const r = new Redis(opt['redis-url'], { maxRetriesPerRequest: 1 });
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await r.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      r.disconnect();
    },
  };
}

/** Whether the postgres-redis deployment can run here: both servers answer. */
async function sharedStoresReachable() {
  try {
    const { default: pg } = await import('pg');
    const { Redis } = await import('ioredis');
    const c = new pg.Client({ connectionString: opt['database-url'], connectionTimeoutMillis: 2000 });
    await c.connect();
    await c.end();
    const r = new Redis(opt['redis-url'], { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => null });
    await r.connect();
    await r.ping();
    r.disconnect();
    return undefined;
  } catch (err) {
    return err.message;
  }
}

/** A fresh bare proxy and a fresh Tollgate (own ledger, empty hold store) for one mode. */
async function startProxies(mode, upstreamUrl, tmp, profileDir, deployment) {
  const probe = ['--import', new URL('./cpu-probe.mjs', import.meta.url).href];
  const bare = await startChild(
    `bare proxy (${mode})`,
    [...probe, path.join(here, 'bare-proxy.mjs'), upstreamUrl, String(PROXY_CONNECTIONS)],
    /listening (\d+)/,
    {
      ipc: true,
      cpus: PIN?.proxy,
    },
  );

  const dir = mkdtempSync(path.join(tmp, `${mode}-`));
  const adminToken = `bench-admin-${randomBytes(16).toString('hex')}`;
  const configFile = path.join(dir, 'tollgate.yaml');
  const store = deployment === 'sqlite' ? { databaseUrl: `sqlite:${path.join(dir, 'tollgate.db')}` } : await sharedStores(mode);
  writeFileSync(configFile, tollgateConfig(upstreamUrl, store, adminToken));
  const profArgs = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `tollgate-${mode}-${Date.now()}.cpuprofile`] : [];
  const tg = await startChild(
    `tollgate ${deployment} (${mode})`,
    [...profArgs, ...probe, CLI, 'serve', '--config', configFile],
    /listening on (http:\/\/127\.0\.0\.1:\d+)/,
    {
      ipc: true,
      cpus: PIN?.proxy,
    },
  );
  const base = tg.match[1];
  const setup = await setupTollgate(base, adminToken);
  return {
    setup,
    base,
    profile: profArgs.length ? path.join(profileDir, profArgs[4]) : undefined,
    drop: store.drop,
    bare: {
      name: 'bare',
      child: bare.child,
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      pool: new Pool(`http://127.0.0.1:${bare.match[1]}`, LOAD_POOL),
    },
    tollgate: {
      name: 'tollgate',
      child: tg.child,
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.key}` },
      pool: new Pool(base, LOAD_POOL),
    },
  };
}

async function main() {
  tmp = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const deadline = setTimeout(
    () => {
      process.stderr.write(`bench: over the ${opt['deadline-s']} s deadline; stopping\n`);
      stopAll().finally(() => process.exit(1));
    },
    Number(opt['deadline-s']) * 1000,
  );
  deadline.unref();
  const pools = [];
  const profiles = [];
  /** Databases and Redis prefixes of the postgres-redis runs, dropped at the end. */
  const drops = [];
  let profileDir;
  if (opt.profile) {
    profileDir = path.resolve(opt.profile);
    mkdirSync(profileDir, { recursive: true });
  }
  const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
  try {
    const { match: up } = await startChild('fake upstream', [path.join(here, 'fake-upstream.mjs')], /listening (\d+)/, { cpus: PIN?.others });
    const upstreamUrl = `http://127.0.0.1:${up[1]}`;

    process.stdout.write(
      `Tollgate CPU overhead vs a bare undici pass-through — ${new Date().toISOString()}\n` +
        `node ${process.version}, ${NCPU} CPUs (${cpuModel}); per mode: ${WARMUP} warm-up requests, then ${ROUNDS} round(s) of ` +
        `${REQUESTS} requests per proxy, concurrency ${CONCURRENCY}, ${BODIES.json.length}-byte request body\n` +
        (PIN ? `pinned: proxies on CPU ${PIN.proxy}, load generator and fake upstream on CPU ${PIN.others}\n` : 'not pinned to CPUs\n') +
        `Tollgate (fresh per mode): prepaid account with 50 credits (in-flight budget applies), key limit 40/day, ` +
        `paid model, settlement window ${WINDOW_MS ?? 60000} ms${WINDOW_MS === undefined ? ' (default)' : ''}; deployments: ${DEPLOYMENTS.join(', ')} ` +
        `(sqlite: SQLite ledger under ${tmp}, limits in process; postgres-redis: a database of its own and a Redis key prefix of its own)\n` +
        (opt.profile ? 'NOTE: --profile is on: Tollgate runs under the CPU profiler, its numbers are inflated.\n' : '') +
        '\n',
    );

    const runs = {};
    const ledger = {};
    const deployments = [];
    for (const d of DEPLOYMENTS) {
      const why = d === 'postgres-redis' ? await sharedStoresReachable() : undefined;
      if (why) process.stdout.write(`note: the postgres-redis deployment is skipped: ${why} (set --database-url / --redis-url)\n`);
      else deployments.push(d);
    }
    for (const [deployment, mode] of deployments.flatMap((d) => MODES.map((m) => [d, m]))) {
      const key = `${deployment}/${mode}`;
      const p = await startProxies(mode, upstreamUrl, tmp, profileDir, deployment);
      pools.push(p.bare.pool, p.tollgate.pool);
      if (p.drop) drops.push(p.drop);
      if (!p.setup.inFlight.subject) throw new Error('the in-flight budget does not apply');
      runs[key] = { bare: [], tollgate: [] };
      // Warm-up, once per proxy: lets V8 optimise the hot paths before anything is measured.
      if (WARMUP > 0) for (const name of ['bare', 'tollgate']) await runLoad(p[name], mode, WARMUP);
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate the order between rounds, so drift does not favour one side.
        const order = round % 2 === 0 ? ['bare', 'tollgate'] : ['tollgate', 'bare'];
        for (const name of order) runs[key][name].push(await measure(p[name], mode));
      }
      // Sanity: every Tollgate request was charged, exactly (260 prompt × 0.000001 + 20 completion × 0.000002).
      await pause(200);
      const credits = await (await fetch(`${p.base}/api/v1/credits`, { headers: { authorization: `Bearer ${p.setup.key}` } })).json();
      const sent = WARMUP + ROUNDS * REQUESTS;
      ledger[key] = { sent, charged: credits.data.total_usage, expected: Math.round(sent * 0.0003 * 1e9) / 1e9 };
      await Promise.all([p.bare.pool, p.tollgate.pool].map((x) => x.destroy().catch(() => undefined)));
      await Promise.all([stopChild(p.bare.child), stopChild(p.tollgate.child)]);
      if (p.profile) profiles.push([key, p.profile]);
    }

    const results = {};
    for (const [key, run] of Object.entries(runs)) {
      const bareS = summarize(run.bare);
      const tgS = summarize(run.tollgate);
      const ratios = run.tollgate.map((t, i) => t.cpuUs / run.bare[i].cpuUs);
      results[key] = { bare: bareS, tollgate: tgS, ratio: tgS.cpu_us_per_req / bareS.cpu_us_per_req, ratio_rounds: ratios };
    }
    printTable(results);

    process.stdout.write('\n');
    for (const [mode, l] of Object.entries(ledger)) {
      const ok = l.charged === l.expected;
      if (!ok) process.exitCode = 1;
      process.stdout.write(
        `ledger check (${mode}): ${l.sent} Tollgate requests, total_usage ${l.charged} credits (expected ${l.expected}) ${ok ? 'OK' : 'MISMATCH'}\n`,
      );
    }
    const mismatch = Object.entries(results).flatMap(([mode, r]) =>
      ['bare', 'tollgate']
        .filter((n) => Math.abs(r[n].proc_cpu_us_per_req - r[n].cpu_us_per_req) * REQUESTS > 2 * (1e6 / CLK_TCK) + 0.05 * r[n].cpu_us_per_req * REQUESTS)
        .map((n) => `${mode} ${n}`),
    );
    if (mismatch.length) process.stdout.write(`warning: /proc and process.cpuUsage() disagree for ${mismatch.join(', ')}\n`);

    if (opt.json) {
      const out = {
        date: new Date().toISOString(),
        node: process.version,
        cpus: NCPU,
        cpu: cpuModel,
        pinned: Boolean(PIN),
        window_ms: WINDOW_MS ?? 60000,
        requests: REQUESTS,
        warmup: WARMUP,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        results,
        ledger,
      };
      writeFileSync(opt.json, `${JSON.stringify(out, null, 2)}\n`);
      process.stdout.write(`results written to ${opt.json}\n`);
    }
  } finally {
    clearTimeout(deadline);
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
    await stopAll();
    for (const drop of drops) await drop().catch((err) => process.stderr.write(`bench: could not drop a bench database or prefix: ${err.message}\n`));
  }
  for (const [mode, file] of profiles) {
    process.stdout.write(`\n[${mode}] ${existsSync(file) ? summarizeProfile(file) : `no profile was written to ${file}\n`}`);
  }
}

main().catch(async (err) => {
  process.stderr.write(`bench: ${err.stack ?? err}\n`);
  if (err.output) process.stderr.write(`--- child output ---\n${err.output}\n`);
  for (const c of started) if (c.output) process.stderr.write(`--- ${c.name} (last output) ---\n${c.output}\n`);
  await stopAll();
  process.exit(1);
});
