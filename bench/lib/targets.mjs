// The proxies a bench run measures, each started on 127.0.0.1 in front of the fake upstream and
// described the same way: a load-generator Pool, the path and headers of a chat request, the body's
// model, how to read its CPU time, and how to stop it.
//   bare      bench/bare-proxy.mjs: node:http + undici Pool.stream, no checks (the baseline)
//   floor     bench/floor-proxy.mjs: the bare proxy parsing and rewriting what it relays, no checks
//   nginx     Debian's nginx, proxy_pass with a keep-alive upstream and proxy_buffering off
//   portkey   Portkey's gateway from npm (@portkey-ai/gateway), OpenAI provider at a custom host
//   tollgate  node dist/cli.js serve, sqlite or postgres-redis, a paid or a `:free` model
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { probe, startChild } from './children.mjs';
import { procStatCpuUs, treeCpuUs } from './cpu.mjs';
import { PERF_NODE_FLAGS } from './perf.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const benchDir = path.resolve(here, '..');
export const root = path.resolve(benchDir, '..');
export const CLI = path.join(root, 'dist', 'cli.js');
export const PORTKEY = path.join(root, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
const PROBE = ['--import', new URL('../cpu-probe.mjs', import.meta.url).href];
/**
 * The Node flags of `npm start` (package.json's start script, `… node FLAGS dist/cli.js serve`): every
 * Node proxy measured runs with them, as `npm start` runs Tollgate (README, `serve`): V8's worker pool
 * sized to the CPUs the process may use (bench/README.md, tenth session), and a young generation of
 * 16 MB from the start (eleventh session).
 */
function startNodeFlags() {
  const start = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts?.start ?? '';
  const m = /\bnode((?:\s+--[\w-]+(?:=\S+)?)*)\s+dist\/cli\.js\s+serve\b/.exec(start);
  if (!m) throw new Error(`package.json's start script is not "… node [FLAGS] dist/cli.js serve": ${JSON.stringify(start)}`);
  return m[1].split(/\s+/).filter(Boolean);
}
export const START_NODE_FLAGS = startNodeFlags();

/** Upstream keep-alive connections of every proxy (Tollgate's default). */
export const PROXY_CONNECTIONS = 128;
/** The price of the paid model, and what one answer of the fake upstream (260 + 20 tokens) costs. */
export const PRICE = { prompt: '0.000001', completion: '0.000002' };
export const COST_PER_REQUEST = 260 * 0.000001 + 20 * 0.000002; // 0.0003

/** A port nothing listens on right now (for servers that cannot be told to pick one: nginx, Portkey). */
export async function freePort() {
  const s = net.createServer();
  await new Promise((resolve, reject) => s.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

function accepts(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** CPU of a Node child that preloads the probe: process.cpuUsage() (µs), /proc as a check. */
async function nodeCpu(child) {
  const m = await probe(child, 'cpu');
  return { us: m.cpu.user + m.cpu.system, sysUs: m.cpu.system, procUs: procStatCpuUs(child.pid) };
}

function describe(t, loadPool) {
  return {
    sent: 0,
    kind: t.id,
    expectCost: false,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    model: 'bench/paid',
    ...t,
    pool: new Pool(t.base, loadPool),
  };
}

/** The bare pass-through (bench/bare-proxy.mjs): the baseline every ratio is to. */
export function startBare(options) {
  return startNodeProxy({ ...options, id: 'bare', label: 'bare', script: 'bare-proxy.mjs' });
}

/** The floor (bench/floor-proxy.mjs): the bare pass-through that also parses and rewrites what it relays. */
export function startFloor(options) {
  return startNodeProxy({ ...options, id: 'floor', label: 'floor (parse + rewrite)', script: 'floor-proxy.mjs' });
}

/** The floor on Fastify, set up as Tollgate's app is (bench/floor-fastify.mjs): what the framework costs a request. */
export function startFloorOnFastify(options) {
  return startNodeProxy({ ...options, id: 'floor-fastify', label: 'floor on Fastify', script: 'floor-fastify.mjs' });
}

async function startNodeProxy({ id, label, script, upstreamUrl, cpus, loadPool, profileDir, tag, perf = false, wrap, timeoutMs, nodeFlags = [] }) {
  const { profile, profArgs } = profilerArgs(profileDir, `${id}-${tag ?? 'run'}`);
  const { child, match } = await startChild(
    `${label} proxy`,
    process.execPath,
    [
      ...START_NODE_FLAGS,
      ...nodeFlags,
      ...profArgs,
      ...(perf ? PERF_NODE_FLAGS : []),
      ...PROBE,
      path.join(benchDir, script),
      upstreamUrl,
      String(PROXY_CONNECTIONS),
    ],
    { ready: /listening (\d+)/, ipc: true, cpus, cwd: root, wrap, timeoutMs },
  );
  return describe({ id, label, child, base: `http://127.0.0.1:${match[1]}`, profile, perf, cpu: () => nodeCpu(child) }, loadPool);
}

/** `node --cpu-prof` arguments writing one profile named after `stem` into `profileDir` (none without a dir). */
function profilerArgs(profileDir, stem) {
  if (!profileDir) return { profile: undefined, profArgs: [] };
  mkdirSync(profileDir, { recursive: true });
  const name = `${stem}-${Date.now()}.cpuprofile`;
  return { profile: path.join(profileDir, name), profArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', name] };
}

/** The nginx binary: --nginx PATH, else the first `nginx` on PATH or in the usual sbin folders. */
export function findNginx(given) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'];
  for (const file of given ? [given] : dirs.filter(Boolean).map((d) => path.join(d, 'nginx'))) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there
    }
  }
  return undefined;
}

function nginxConfig(dir, port, upstreamPort) {
  let user = '';
  if (process.getuid?.() === 0) {
    // As root, the workers drop to `user`; nginx's built-in default group "nobody" does not exist on Debian.
    const groups = readFileSync('/etc/group', 'utf8');
    user = `user nobody ${/^nogroup:/m.test(groups) ? 'nogroup' : 'nobody'};\n`;
  }
  return `# generated by bench/overhead.mjs
${user}daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream fake {
    server 127.0.0.1:${upstreamPort};
    keepalive ${PROXY_CONNECTIONS};
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://fake;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
    }
  }
}
`;
}

/** nginx in front of the fake upstream (its own config, pid and logs in a temp dir); CPU = master + workers. */
export async function startNginx({ binary, upstreamUrl, tmp, cpus, loadPool }) {
  const dir = mkdtempSync(path.join(tmp, 'nginx-'));
  chmodSync(dir, 0o755); // the workers (user nobody when run as root) reach the temp paths
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(dir, port, new URL(upstreamUrl).port));
  const { child } = await startChild('nginx', binary, ['-p', `${dir}/`, '-c', conf, '-e', `${dir}/error.log`], {
    readyCheck: () => accepts(port),
    cpus,
    cwd: dir,
  });
  child.errorLog = path.join(dir, 'error.log');
  const cpu = async () => treeCpuUs(child.pid);
  return describe({ id: 'nginx', label: 'nginx', child, base: `http://127.0.0.1:${port}`, cpu }, loadPool);
}

/**
 * Portkey's gateway, as `npx @portkey-ai/gateway` runs it (build/start-server.js, --headless: no
 * web UI), with no config or checks: each request names its provider (openai) and a custom host
 * (the fake upstream) in x-portkey-* headers. It listens on every interface unless told otherwise
 * and cannot be told: bench/loopback-only.mjs makes it listen on 127.0.0.1.
 */
export async function startPortkey({ upstreamUrl, cpus, loadPool }) {
  const port = await freePort();
  const env = { ...process.env };
  delete env.REDIS_CONNECTION_STRING; // Portkey would open caches in that Redis
  env.NODE_ENV = 'production';
  const { child } = await startChild(
    'portkey',
    process.execPath,
    [...START_NODE_FLAGS, '--import', new URL('../loopback-only.mjs', import.meta.url).href, ...PROBE, PORTKEY, `--port=${port}`, '--headless'],
    { ready: /Ready for connections/, ipc: true, cpus, env, cwd: root },
  );
  return describe(
    {
      id: 'portkey',
      label: 'portkey',
      child,
      base: `http://127.0.0.1:${port}`,
      model: 'fake-model',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-fake-upstream-key',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${upstreamUrl}/v1`,
      },
      cpu: () => nodeCpu(child),
    },
    loadPool,
  );
}

// ---------------------------------------------------------------------------------------------
// Tollgate

function tollgateConfig({ upstreamUrl, store, adminToken, windowMs, connections }) {
  const huge = 1_000_000_000;
  return `# generated by bench/overhead.mjs
listen: { host: 127.0.0.1, port: 0 }
database_url: ${store.databaseUrl}
${store.redisUrl ? `redis_url: ${store.redisUrl}\nredis_key_prefix: "${store.prefix}"\n` : ''}admin_token: ${adminToken}
secrets_key: ${randomBytes(32).toString('base64')}
log_level: warn
limits:
  ddos: { per_ip_per_second: 1000000 }
  # high enough that no request is refused, low enough that every one is checked and counted
  free_models: { per_minute: ${huge}, per_day_low: ${huge}, per_day_high: ${huge} }
${windowMs === undefined ? '' : `  in_flight: { settlement_window_ms: ${windowMs} }\n`}providers:
  - id: fake
    type: openai
    base_url: ${upstreamUrl}/v1
    api_key: sk-fake-upstream-key
    connections: ${connections}
models:
  - id: bench/paid
    context_length: 8192
    endpoints:
      - provider: fake
        model: fake-model
        pricing: { prompt: "${PRICE.prompt}", completion: "${PRICE.completion}" }
  - id: bench/paid:free
    context_length: 8192
    capacity_per_minute: ${huge}
    endpoints:
      - provider: fake
        model: fake-model
        pricing: { prompt: "0", completion: "0" }
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

/**
 * The bench account's balance. Below `balance_threshold` (100), so the in-flight budget applies to every
 * request; its budget (half the balance) holds each answer's cost (0.0003) for the settlement window,
 * so at the bench's 5 s window it admits up to 45 / 0.0003 / 5 = 30,000 answers a second. With 50
 * credits (before 2026-11-28) a quick host serving ~11,000 a second through SQLite was refused with a
 * 402 in its warm-up, as it should be: 25 credits of budget, less what the warm-up had spent.
 */
export const BENCH_CREDITS = 90;

/** A prepaid account with BENCH_CREDITS and a key with a daily limit of 10,000 credits: checked (and held
 * against) on every request, and out of reach of a long run, whose account is credited back. */
async function setupAccount(base, adminToken) {
  const { data: account } = await admin(base, adminToken, 'POST', '/api/v1/admin/accounts', { name: 'bench', type: 'prepaid' });
  await admin(base, adminToken, 'POST', `/api/v1/admin/accounts/${account.id}/credits`, { amount: BENCH_CREDITS });
  const { key } = await admin(base, adminToken, 'POST', `/api/v1/admin/accounts/${account.id}/keys`, { name: 'bench', limit: 10_000, limit_reset: 'daily' });
  const { data: shown } = await admin(base, adminToken, 'GET', `/api/v1/admin/accounts/${account.id}`);
  if (!shown.in_flight?.subject) throw new Error(`the in-flight budget does not apply to the bench account: ${JSON.stringify(shown)}`);
  return { accountId: account.id, key };
}

/**
 * A fresh Tollgate (own ledger, empty hold store): `deployment` sqlite (a SQLite file, limits in
 * process) or postgres-redis (`store` from sharedStores()); `free` sends the `:free` model (free-model
 * limits checked and counted on every request) instead of the paid one; `nodeFlags` are added to
 * `npm start`'s (--node-flags, this build's only). Its ledger check compares what it charged (and,
 * free, counted) with the requests sent to it.
 */
export async function startTollgate({
  deployment,
  free,
  upstreamUrl,
  tmp,
  store,
  cpus,
  loadPool,
  windowMs,
  connections = PROXY_CONNECTIONS,
  profileDir,
  tag,
  baseline,
  perf = false,
  nodeFlags = [],
  wrap,
  timeoutMs,
}) {
  const dir = mkdtempSync(path.join(tmp, `tollgate-${deployment}-${free ? 'free-' : ''}${baseline ? 'baseline-' : ''}`));
  const adminToken = `bench-admin-${randomBytes(16).toString('hex')}`;
  const configFile = path.join(dir, 'tollgate.yaml');
  const st = deployment === 'sqlite' ? { databaseUrl: `sqlite:${path.join(dir, 'tollgate.db')}` } : store;
  writeFileSync(configFile, tollgateConfig({ upstreamUrl, store: st, adminToken, windowMs, connections }));
  const { profile, profArgs } = profilerArgs(profileDir, `tollgate-${deployment}${free ? '-free' : ''}${baseline ? '-baseline' : ''}-${tag ?? 'run'}`);
  const label = `tollgate ${deployment}${free ? ', free' : ''}${baseline ? ', baseline' : ''}`;
  const cli = baseline ? path.join(baseline, 'dist', 'cli.js') : CLI;
  const { child, match } = await startChild(
    label,
    process.execPath,
    [...START_NODE_FLAGS, ...nodeFlags, ...profArgs, ...(perf ? PERF_NODE_FLAGS : []), ...PROBE, cli, 'serve', '--config', configFile],
    {
      ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/,
      ipc: true,
      cpus,
      cwd: baseline ?? root,
      wrap,
      timeoutMs,
    },
  );
  const base = match[1];
  const { accountId, key } = await setupAccount(base, adminToken);
  const auth = { authorization: `Bearer ${key}` };
  const target = describe(
    {
      id: `tollgate:${deployment}${free ? ':free' : ''}${baseline ? ':baseline' : ''}`,
      label,
      kind: 'tollgate',
      deployment,
      free,
      baseline: Boolean(baseline),
      child,
      base,
      profile,
      perf,
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json', ...auth },
      model: free ? 'bench/paid:free' : 'bench/paid',
      expectCost: true,
      cpu: () => nodeCpu(child),
    },
    loadPool,
  );
  /**
   * Adds `credits` to the bench account's balance: a long run at full speed spends the BENCH_CREDITS it
   * starts with (0.0003 a request), and its in-flight budget, half the balance, shrinks with it until it refuses.
   */
  target.topUp = (credits) => admin(base, adminToken, 'POST', `/api/v1/admin/accounts/${accountId}/credits`, { amount: credits });
  /** Credits back what `requests` answers cost (0.0003 each; a free model's nothing), so that a long run does not drain the account. */
  target.creditBack = async (requests) => {
    if (requests > 0 && !free) await target.topUp(Math.round(requests * COST_PER_REQUEST * 1e9) / 1e9);
  };
  /** Every request sent was admitted and charged exactly (paid), or counted and charged nothing (free). */
  target.ledgerCheck = async (sent = target.sent) => {
    const get = async (route) => (await fetch(`${base}${route}`, { headers: auth })).json();
    const credits = (await get('/api/v1/credits')).data;
    if (!free) {
      const expected = Math.round(sent * COST_PER_REQUEST * 1e9) / 1e9;
      return {
        ok: credits.total_usage === expected,
        text: `${sent} requests, total_usage ${credits.total_usage} credits (expected ${expected})`,
        sent,
        charged: credits.total_usage,
        expected,
      };
    }
    const used = (await get('/api/v1/key')).data.free_model_daily_requests.used;
    return {
      ok: credits.total_usage === 0 && used === sent,
      text: `${sent} free-model requests, ${used} counted today (expected ${sent}), total_usage ${credits.total_usage} (expected 0)`,
      sent,
      counted: used,
      charged: credits.total_usage,
      expected: 0,
    };
  };
  return target;
}
