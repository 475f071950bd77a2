#!/usr/bin/env node
// One client, one request at a time: what a lone request costs Tollgate (CPU µs) and how long it takes
// (p50, p90, p99), against the same fake upstream, optionally beside another build (--baseline DIR, a
// built checkout) in alternating rounds. A lone request is the common case of a gateway at low load; on
// a VM whose CPUs idle between requests it costs several times what a request under load does (see
// bench/README.md, 2026-11-25).
//
//   npm run build && node bench/lone-request.mjs [--deployment sqlite|postgres-redis] [--mode json|sse]
//                                                [--baseline DIR] [--rounds 6] [--round-ms 1500]
import { Pool } from 'undici';
import { stopAll } from './lib/children.mjs';
import { bodyFor } from './lib/load.mjs';
import { checkBuildOptions, dieAs, setUp, startBuilds, parseOptions, buildOptions } from './lib/cli-options.mjs';

const opt = parseOptions('lone-request', {
  rounds: { type: 'string', default: '6' },
  'round-ms': { type: 'string', default: '1500' },
  ...buildOptions,
});
const die = dieAs('lone-request');
const baseline = checkBuildOptions(opt, die);
const ROUNDS = Number(opt.rounds);
const ROUND_MS = Number(opt['round-ms']);
if (!(ROUNDS >= 1 && ROUNDS <= 100) || !(ROUND_MS >= 100 && ROUND_MS <= 60_000)) die('--rounds 1..100, --round-ms 100..60000');

try {
  const { tmp, upstreamUrl } = await setUp('lone');
  const unused = new Pool('http://127.0.0.1:9', {}); // startTollgate's load pool: this script sends through its own
  const targets = [];
  for (const t of await startBuilds(opt, baseline, { tag: 'lone', upstreamUrl, tmp, loadPool: unused })) {
    targets.push({ t, pool: new Pool(t.base, { connections: 1 }), body: bodyFor(t.model, opt.mode), n: 0, cpuUs: 0, lat: [] });
  }
  const one = async (x) => {
    const res = await x.pool.request({ method: 'POST', path: x.t.path, headers: x.t.headers, body: x.body });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${x.t.label}: status ${res.statusCode}`);
  };
  for (const x of targets) for (let i = 0; i < 300; i++) await one(x); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const x of round % 2 === 0 ? targets : [...targets].reverse()) {
      const c0 = (await x.t.cpu()).us;
      const t0 = performance.now();
      while (performance.now() - t0 < ROUND_MS) {
        const s = performance.now();
        await one(x);
        x.lat.push(performance.now() - s);
        x.n++;
      }
      x.cpuUs += (await x.t.cpu()).us - c0;
    }
  }
  const at = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))].toFixed(2);
  process.stdout.write(`lone requests, ${opt.mode}, ${opt.deployment}: ${ROUNDS} alternating rounds of ${ROUND_MS} ms per build\n`);
  for (const x of targets) {
    const l = x.lat.sort((a, b) => a - b);
    process.stdout.write(
      `${x.t.label.padEnd(36)} ${String(x.n).padStart(6)} requests  CPU ${(x.cpuUs / x.n).toFixed(0).padStart(6)} µs/req  p50 ${at(l, 0.5)} ms  p90 ${at(l, 0.9)} ms  p99 ${at(l, 0.99)} ms\n`,
    );
  }
  for (const x of targets) await x.pool.close();
  await unused.close();
} finally {
  await stopAll();
}
