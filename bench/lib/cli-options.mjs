// Options and set-up shared by the bench scripts that run Tollgate in one deployment and mode, optionally
// beside another build (lone-request.mjs, open-loop.mjs, side-by-side.mjs).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { installExitHandlers, onStopAll, startChild } from './children.mjs';
import { sharedStores } from './stores.mjs';
import { CLI, benchDir, startTollgate } from './targets.mjs';

/** parseArgs options: the PostgreSQL server and Redis of the postgres-redis deployment. */
export const storeOptions = {
  'database-url': { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  'redis-url': { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
};

/** parseArgs option: Node flags for this build's Tollgate only (not the baseline's), to try one against the other. */
export const nodeFlagsOption = { 'node-flags': { type: 'string', default: '' } };

/** parseArgs options of the scripts that run this build beside another (checkBuildOptions checks them), with the stores'. */
export const buildOptions = {
  deployment: { type: 'string', default: 'sqlite' },
  mode: { type: 'string', default: 'json' },
  baseline: { type: 'string' },
  // the settlement window (in_flight.settlement_window_ms): at thousands of answers a second, 60 s of settled
  // costs outgrow the bench account's in-flight budget and Tollgate rightly refuses with a 402
  'window-ms': { type: 'string', default: '5000' },
  ...nodeFlagsOption,
  ...storeOptions,
};

/** parseArgs option: a warm-up that also lasts at least this long (warmUp in load.mjs); warmupMsOf reads it. */
export const warmupSecondsOption = { 'warmup-s': { type: 'string' } };

/** --warmup-s in ms; by default the settlement window (--window-ms) and 2 s more. */
export function warmupMsOf(opt, die) {
  if (opt['warmup-s'] === undefined) return Number(opt['window-ms']) + 2000;
  const s = Number(opt['warmup-s']);
  if (!(Number.isFinite(s) && s >= 0)) die('--warmup-s must be a number from 0 (seconds)');
  return s * 1000;
}

/** Prints `script: message` and exits 2. */
export const dieAs = (script) => (message) => {
  process.stderr.write(`${script}: ${message}\n`);
  process.exit(2);
};

/**
 * The command line read against `options` (parseArgs). `--help` lists the options with their defaults
 * and exits 0; an unknown or malformed option exits 2 naming it, without a stack trace.
 */
export function parseOptions(script, options) {
  const all = { ...options, help: { type: 'boolean', short: 'h', default: false } };
  let values;
  try {
    ({ values } = parseArgs({ options: all }));
  } catch (err) {
    dieAs(script)(`${err.message} (--help lists the options; bench/README.md says what they do)`);
  }
  if (values.help) {
    const lines = Object.entries(options).map(([name, o]) => {
      const shown = o.default === undefined || o.default === '' ? '' : ` (default ${o.default})`;
      return `  --${name}${o.type === 'string' ? ' VALUE' : ''}${shown}`;
    });
    process.stdout.write(`usage: node bench/${script}.mjs [options]; what they do: bench/README.md\n${lines.join('\n')}\n`);
    process.exit(0);
  }
  return values;
}

/** The --node-flags value as arguments for node. */
export const nodeFlagsOf = (opt) => (opt['node-flags'] ?? '').split(/\s+/).filter(Boolean);

/** Checks --deployment, --mode, that this checkout is built and --baseline (a built checkout); the baseline's absolute path. */
export function checkBuildOptions(opt, die) {
  if (!['sqlite', 'postgres-redis'].includes(opt.deployment)) die('--deployment takes sqlite or postgres-redis');
  if (!['json', 'sse'].includes(opt.mode)) die('--mode takes json or sse');
  if (!existsSync(CLI)) die('dist/cli.js is missing: run `npm run build` first');
  const baseline = opt.baseline === undefined ? undefined : path.resolve(opt.baseline);
  if (baseline && !existsSync(path.join(baseline, 'dist', 'cli.js'))) die(`--baseline ${baseline}: no dist/cli.js there (a checkout, built)`);
  const windowMs = Number(opt['window-ms']);
  if (!(Number.isInteger(windowMs) && windowMs >= 1)) die('--window-ms takes a whole number of milliseconds, 1 or more');
  return baseline;
}

/**
 * A paid Tollgate of this build in `opt.deployment` and, with a baseline, one of that build: each its own
 * ledger (a PostgreSQL database and Redis prefix named after `tag`, dropped at the end, on postgres-redis).
 */
export async function startBuilds(opt, baseline, { tag, upstreamUrl, tmp, loadPool, cpus, profileDir, perf = false }) {
  const nodeFlags = nodeFlagsOf(opt);
  const targets = [];
  for (const build of [undefined, ...(baseline ? [baseline] : [])]) {
    let store;
    if (opt.deployment === 'postgres-redis') {
      store = await sharedStores({ databaseUrl: opt['database-url'], redisUrl: opt['redis-url'] }, `${tag}${build ? '_baseline' : ''}`);
      onStopAll(store.drop);
    }
    targets.push(
      await startTollgate({
        deployment: opt.deployment,
        free: false,
        upstreamUrl,
        tmp,
        store,
        loadPool,
        cpus,
        baseline: build,
        profileDir,
        perf,
        tag,
        windowMs: Number(opt['window-ms']),
        nodeFlags: build ? [] : nodeFlags,
      }),
    );
  }
  return targets;
}

/**
 * What every such script starts with: exit handlers that stop its children, a temp dir (removed at the
 * end) and the fake upstream (on `cpus`, when pinned). Call stopAll() (children.mjs) when done.
 */
export async function setUp(name, { cpus } = {}) {
  installExitHandlers();
  const tmp = mkdtempSync(path.join(tmpdir(), `tollgate-${name}-`));
  onStopAll(() => rmSync(tmp, { recursive: true, force: true }));
  const { match } = await startChild('fake upstream', process.execPath, [path.join(benchDir, 'fake-upstream.mjs')], { ready: /listening (\d+)/, cpus });
  return { tmp, upstreamUrl: `http://127.0.0.1:${match[1]}` };
}
