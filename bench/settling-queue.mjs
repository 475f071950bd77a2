#!/usr/bin/env node
// What the in-flight budget's settlement window costs V8's heap: the ended requests' costs an account
// keeps until their window closes (dist/limits/settling-queue.js), as a gateway under load keeps them
// (at 4,000 requests a second and a 5 s window, 20,000 at a time; at Tollgate's default 60 s window, 12
// times that). For this build and, with --baseline DIR (a built checkout), that one, each in a child
// process of its own (node --expose-gc), alternating over --rounds:
//   - bytes on V8's heap an entry, the id aside: the heap after full collections of a process holding
//     --entries ids (flat strings of a generation id's length) in a queue, less that of one holding
//     the same ids alone (in one process the difference moves with what sweeping has left);
//   - a steady window of --live entries, then --ops request turns (the admission's take, the
//     settlement's add, the expiry of the oldest): ns a turn, the collections it brought (scavenges,
//     full ones) and how much the old generation grew: garbage that only a full collection reclaims.
//
//   npm run build && node bench/settling-queue.mjs [--entries 100000] [--live 20000] [--ops 1000000] [--rounds 2] [--baseline DIR]
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseOptions } from './lib/cli-options.mjs';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..');

if (process.argv[2] === '--child') {
  const [, , , what, dir, ...numbers] = process.argv;
  const [entries, live, ops] = numbers.map(Number);
  console.log(JSON.stringify(what === 'turns' ? await turns(dir, live, ops) : await heldBytes(dir, entries, what === 'queue')));
  process.exit(0);
}

const opt = parseOptions('settling-queue', {
  entries: { type: 'string', default: '100000' },
  live: { type: 'string', default: '20000' },
  ops: { type: 'string', default: '1000000' },
  rounds: { type: 'string', default: '2' },
  baseline: { type: 'string' },
});
const builds = [['this build', root], ...(opt.baseline ? [['baseline', path.resolve(opt.baseline)]] : [])];
for (const [, dir] of builds) {
  if (!existsSync(path.join(dir, 'dist', 'limits', 'settling-queue.js'))) {
    process.stderr.write(`settling-queue: ${dir} has no dist/limits/settling-queue.js (build it first)\n`);
    process.exit(2);
  }
}

const results = new Map(builds.map(([name]) => [name, []]));
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const [name, dir] of round % 2 === 0 ? builds : [...builds].reverse()) {
    const child = (what) =>
      JSON.parse(execFileSync(process.execPath, ['--expose-gc', here, '--child', what, dir, opt.entries, opt.live, opt.ops], { encoding: 'utf8' }));
    const alone = child('ids');
    const queued = child('queue');
    results.get(name).push({
      bytesPerEntry: (queued.heapUsed - alone.heapUsed) / Number(opt.entries),
      offHeapPerEntry: (queued.arrayBuffers - alone.arrayBuffers) / Number(opt.entries),
      ...child('turns'),
    });
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cols = [
  ['heap B/entry', (r) => r.bytesPerEntry.toFixed(0)],
  ['off-heap B/entry', (r) => r.offHeapPerEntry.toFixed(0)],
  ['ns/turn', (r) => r.nsPerTurn.toFixed(0)],
  ['scavenges', (r) => String(r.scavenges)],
  ['full GCs', (r) => String(r.fullGcs)],
  ['old gen growth B/turn', (r) => r.oldGrowthPerTurn.toFixed(1)],
];
console.log(
  `settling queue: ${opt.entries} entries for the bytes, a window of ${opt.live} for ${opt.ops} turns (take, add, expire); medians of ${opt.rounds} round(s), node ${process.version}`,
);
console.log(['build'.padEnd(12), ...cols.map(([h]) => h.padStart(22))].join(''));
for (const [name, rs] of results) {
  const m = Object.fromEntries(Object.keys(rs[0]).map((k) => [k, median(rs.map((r) => r[k]))]));
  console.log([name.padEnd(12), ...cols.map(([, f]) => f(m).padStart(22))].join(''));
}

/** Ids of a generation id's length, flat, the same in every process. */
function idsFrom(n, from) {
  return Array.from({ length: n }, (_, i) => Buffer.from(`gen-1795775180-${String(from + i).padStart(17, '0')}`).toString('latin1'));
}

function fullCollections() {
  for (let i = 0; i < 3; i++) globalThis.gc();
}

/** The heap of a process holding `entries` ids, in a settling queue (`queued`) or alone. */
async function heldBytes(dir, entries, queued) {
  const { SettlingQueue } = await import(pathToFileURL(path.join(dir, 'dist', 'limits', 'settling-queue.js')).href);
  const ids = idsFrom(entries, 0);
  const q = new SettlingQueue();
  if (queued) for (let i = 0; i < entries; i++) q.add(ids[i], 300_000n + BigInt(i % 1000), 1e12 + i);
  fullCollections();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  if (q.size !== (queued ? entries : 0) || ids.length !== entries) throw new Error('lost entries');
  return { heapUsed, arrayBuffers };
}

/**
 * A steady window: each turn takes the next id out (an admission), adds it (its settlement) and
 * expires the oldest, as requests arriving at a steady rate do.
 */
async function turns(dir, live, ops) {
  const { SettlingQueue } = await import(pathToFileURL(path.join(dir, 'dist', 'limits', 'settling-queue.js')).href);
  const v8 = await import('node:v8');
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const ids = idsFrom(live + ops, 0);
  const q = new SettlingQueue();
  for (let i = 0; i < live; i++) q.add(ids[i], 300_000n, i);
  fullCollections();
  let scavenges = 0;
  let fullGcs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
      else if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullGcs++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const old = () =>
    v8.getHeapSpaceStatistics().reduce((t, s) => (s.space_name === 'old_space' || s.space_name === 'large_object_space' ? t + s.space_used_size : t), 0);
  const oldBefore = old();
  const started = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) {
    const id = ids[live + i];
    q.take(id);
    q.add(id, 300_000n, live + i);
    q.expire(i);
  }
  const nsPerTurn = Number(process.hrtime.bigint() - started) / ops;
  const oldGrowthPerTurn = (old() - oldBefore) / ops;
  await new Promise((resolve) => setTimeout(resolve, 10)); // the observer's last entries
  observer.disconnect();
  if (q.size !== live) throw new Error(`the window holds ${q.size} entries, not ${live}`);
  return { nsPerTurn, scavenges, fullGcs, oldGrowthPerTurn };
}
