// End to end: what the durability wait adds to an answer's latency, JSON and SSE, SQLite and
// PostgreSQL, measured at the client against a baseline build that sends answers before their charge
// is durable (a git ref from before the change, e.g. f55d73f).
//
//   npm run build && node bench/answer-latency.mjs --baseline f55d73f [--clients 16] [--requests 2000]
//
// The baseline is extracted with `git archive` into a temp dir (no worktree is touched) and built
// there with this checkout's node_modules. One fake upstream (bench/fake-upstream.mjs) serves both;
// for each ledger, each build runs on a fresh database, alternating builds over --rounds rounds.
// Latency: request sent → last byte read (the whole JSON body; for SSE, `data: [DONE]`).
import { execFileSync, execSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';

const root = resolve(import.meta.dirname, '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const BASELINE = arg('baseline');
if (!BASELINE) throw new Error('--baseline REF is required (a commit before answers waited for durable charges)');
const CLIENTS = Number(arg('clients', '16'));
const REQUESTS = Number(arg('requests', '2000'));
const ROUNDS = Number(arg('rounds', '2'));
const ADMIN = 'bench-admin-token-0123456789abcdef';

const children = new Set();
const tmp = mkdtempSync(join(tmpdir(), 'tollgate-latency-'));
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);

function start(args, ready) {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`did not start: ${out}`)), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        res({ child, match: m });
      }
    });
    child.stderr.on('data', (d) => (out += d));
    child.once('exit', (code) => rej(new Error(`exited ${code}: ${out}`)));
  });
}

async function stop(child) {
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
  children.delete(child);
}

function buildBaseline() {
  const dir = join(tmp, 'baseline');
  execSync(`mkdir -p ${dir} && git archive ${BASELINE} src tsconfig.json tsconfig.build.json package.json | tar -x -C ${dir}`, { cwd: root });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  return join(dir, 'dist', 'cli.js');
}

async function databases() {
  const list = [{ name: 'sqlite', url: () => `sqlite:${join(tmp, `${randomBytes(4).toString('hex')}.db`)}` }];
  if (process.env.DATABASE_URL) {
    list.push({
      name: 'postgres',
      url: async () => {
        const name = `tollgate_latency_${process.pid}_${randomBytes(3).toString('hex')}`;
        const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await c.connect();
        await c.query(`CREATE DATABASE ${name}`);
        await c.end();
        dropLater.push(name);
        const u = new URL(process.env.DATABASE_URL);
        u.pathname = `/${name}`;
        return u.toString();
      },
    });
  }
  return list;
}
const dropLater = [];

async function admin(base, route, body) {
  const res = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function gateway(cli, upstream, databaseUrl) {
  const config = join(tmp, `${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(
    config,
    `listen: { host: 127.0.0.1, port: 0 }
database_url: ${databaseUrl}
admin_token: ${ADMIN}
log_level: warn
limits: { ddos: { per_ip_per_second: 1000000 } }
providers: [{ id: fake, type: openai, base_url: ${upstream}/v1, api_key: sk-fake }]
models:
  - id: bench/paid
    endpoints: [{ provider: fake, model: fake-model, pricing: { prompt: "0.000001", completion: "0.000002" } }]
`,
  );
  const { child, match } = await start([cli, 'serve', '--config', config], /listening on (http:\/\/[\d.]+:\d+)/);
  const base = match[1];
  const { data: account } = await admin(base, '/api/v1/admin/accounts', { name: 'bench', type: 'enterprise' });
  await admin(base, `/api/v1/admin/accounts/${account.id}/credits`, { amount: 1000 });
  const { key } = await admin(base, `/api/v1/admin/accounts/${account.id}/keys`, {});
  return { child, base, key };
}

async function load(gw, stream) {
  const pool = new Pool(gw.base, { connections: CLIENTS });
  const body = JSON.stringify({ model: 'bench/paid', stream, messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });
  const headers = { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' };
  const run = async (n) => {
    const lat = [];
    let next = 0;
    const worker = async () => {
      while (next++ < n) {
        const t0 = performance.now();
        const res = await pool.request({ method: 'POST', path: '/api/v1/chat/completions', headers, body });
        const text = await res.body.text();
        lat.push(performance.now() - t0);
        if (res.statusCode !== 200 || !text.includes('"cost"')) throw new Error(`bad answer ${res.statusCode}: ${text.slice(0, 300)}`);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, worker));
    return lat;
  };
  await run(Math.min(500, REQUESTS)); // warm-up
  const lat = await run(REQUESTS);
  await pool.close();
  return lat;
}

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

const builds = { durable: join(root, 'dist', 'cli.js'), baseline: buildBaseline() };
const { child: upChild, match } = await start([join(root, 'bench/fake-upstream.mjs')], /listening (\d+)/);
const upstream = `http://127.0.0.1:${match[1]}`;
const rows = [];
try {
  for (const db of await databases()) {
    for (const mode of ['json', 'sse']) {
      const lat = { durable: [], baseline: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const which of r % 2 === 0 ? ['baseline', 'durable'] : ['durable', 'baseline']) {
          const gw = await gateway(builds[which], upstream, await db.url());
          lat[which].push(...(await load(gw, mode === 'sse')));
          await stop(gw.child);
        }
      }
      const row = { db: db.name, mode };
      for (const which of ['baseline', 'durable']) row[which] = { p50: pct(lat[which], 50), p99: pct(lat[which], 99) };
      rows.push(row);
    }
  }
} finally {
  await stop(upChild);
  for (const name of dropLater) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  }
}
const f = (x) => x.toFixed(2).padStart(7);
console.log(`${CLIENTS} clients, ${REQUESTS} requests × ${ROUNDS} rounds per build; latency to the last byte, ms`);
console.log('ledger    mode  baseline p50  durable p50  added p50 | baseline p99  durable p99  added p99');
for (const r of rows) {
  console.log(
    `${r.db.padEnd(9)} ${r.mode.padEnd(4)}  ${f(r.baseline.p50)}      ${f(r.durable.p50)}     ${f(r.durable.p50 - r.baseline.p50)}   |  ${f(r.baseline.p99)}      ${f(r.durable.p99)}    ${f(r.durable.p99 - r.baseline.p99)}`,
  );
}
