#!/usr/bin/env node
// This build against another (--baseline DIR, a built checkout) under the same load at the same time:
// both Tollgates on the same CPU, each sent a closed loop of its own by one load generator, for
// --windows windows of --seconds each; each window reads both processes' CPU. What one build costs
// against the other is the median over the windows of the ratio of their CPU per request in the same
// window. The machine's drift (this host's CPU time per request moves by tens of percent between one
// second and the next) then falls on both alike, where `npm run bench -- --baseline` measures them
// one after the other. For telling a change of a few percent from noise (bench/README.md).
// With --against bare, the other process is the bare pass-through (bench/bare-proxy.mjs) instead of
// another build: the ratio the targets of `npm run bench` are stated in, with the drift on both alike.
//
//   npm run bench:side-by-side -- --baseline DIR [--deployment sqlite|postgres-redis]
//                                                [--mode json|sse] [--windows 20] [--seconds 1] [--concurrency 8] [--warmup 2000] [--warmup-s S]
//   npm run bench:side-by-side -- --against bare [the same options]
import { pinning, stopAll } from './lib/children.mjs';
import { bodyFor, one, warmUp } from './lib/load.mjs';
import { median } from './lib/report.mjs';
import { checkBuildOptions, dieAs, setUp, startBuilds, parseOptions, buildOptions, warmupMsOf, warmupSecondsOption } from './lib/cli-options.mjs';
import { startBare } from './lib/targets.mjs';

const opt = parseOptions('side-by-side', {
  windows: { type: 'string', default: '20' },
  seconds: { type: 'string', default: '1' },
  concurrency: { type: 'string', default: '8' },
  // `bare`: this build against the bare pass-through rather than another build
  against: { type: 'string' },
  // each build's warm-up: this many requests (default 2,000), and at least --warmup-s long (s; default: the settlement window and 2 s more)
  warmup: { type: 'string', default: '2000' },
  ...warmupSecondsOption,
  ...buildOptions,
});
const die = dieAs('side-by-side');
const baseline = checkBuildOptions(opt, die);
const WARMUP_MS = warmupMsOf(opt, die);
const againstBare = opt.against === 'bare';
if (opt.against !== undefined && !againstBare) die('--against takes bare (the bare pass-through)');
if (againstBare && baseline) die('--against bare and --baseline DIR each name what this build is compared with: give one');
if (!baseline && !againstBare) die('--baseline DIR or --against bare is required (what to compare this build with)');
const otherName = againstBare ? 'the bare proxy' : baseline;
const otherLabel = againstBare ? 'bare' : 'baseline';
const WINDOWS = Number(opt.windows);
const SECONDS = Number(opt.seconds);
const CONCURRENCY = Number(opt.concurrency);
const WARMUP = Number(opt.warmup);
if (!(Number.isInteger(WINDOWS) && WINDOWS >= 1 && WINDOWS <= 500)) die('--windows 1..500');
if (!(SECONDS > 0 && SECONDS <= 60)) die('--seconds 0..60');
if (!(Number.isInteger(CONCURRENCY) && CONCURRENCY >= 1 && CONCURRENCY <= 256)) die('--concurrency 1..256');
if (!(Number.isInteger(WARMUP) && WARMUP >= 0 && WARMUP <= 10_000_000)) die('--warmup 0..10000000 (requests)');
if (!['json', 'sse'].includes(opt.mode)) die('--mode json or sse');

/** Sends requests to `target` from `concurrency` workers until `stop()` says so; counts the answers. */
function loop(target, mode, concurrency, stop) {
  const body = bodyFor(target.model, mode);
  const worker = async () => {
    while (!stop()) {
      target.sent++;
      await one(target.pool, target, mode, body);
      target.answered++;
    }
  };
  return Promise.all(Array.from({ length: concurrency }, worker));
}

const pin = pinning('auto', die);
try {
  const { tmp, upstreamUrl } = await setUp('side-by-side', { cpus: pin?.others });
  const started = { tag: 'sidebyside', upstreamUrl, tmp, loadPool: { connections: CONCURRENCY }, cpus: pin?.proxy };
  const [mine, base] = againstBare ? [...(await startBuilds(opt, undefined, started)), await startBare(started)] : await startBuilds(opt, baseline, started);
  for (const t of [mine, base]) {
    t.sent = 0;
    t.answered = 0;
    await warmUp(t, opt.mode, { requests: WARMUP, ms: WARMUP_MS, concurrency: CONCURRENCY }); // one at a time
  }
  process.stdout.write(
    `side by side, ${opt.mode}, ${opt.deployment}: this build and ${otherName} under load at once (${CONCURRENCY} workers each), ` +
      `${WINDOWS} windows of ${SECONDS} s, after a warm-up of 2000 requests each lasting at least ${WARMUP_MS / 1000} s; CPU µs per request answered in each window\n\n`,
  );
  let stopped = false;
  const loops = [mine, base].map((t) => loop(t, opt.mode, CONCURRENCY, () => stopped));
  const ratios = [];
  const perReq = { mine: [], base: [] };
  try {
    for (let w = 1; w <= WINDOWS; w++) {
      // What each spent since the last window goes back on its balance, outside the measured window: at
      // several thousand answers a second the balance would fall until the in-flight budget refused.
      for (const t of [mine, base]) {
        if (!t.creditBack) continue; // the bare proxy charges nothing
        await t.creditBack(t.answered - (t.toppedUpAt ?? 0));
        t.toppedUpAt = t.answered;
      }
      const start = await Promise.all([mine, base].map(async (t) => ({ cpu: (await t.cpu()).us, answered: t.answered })));
      await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
      const end = await Promise.all([mine, base].map(async (t) => ({ cpu: (await t.cpu()).us, answered: t.answered })));
      const [a, b] = [0, 1].map((i) => (end[i].cpu - start[i].cpu) / Math.max(1, end[i].answered - start[i].answered));
      perReq.mine.push(a);
      perReq.base.push(b);
      ratios.push(a / b);
      process.stdout.write(
        `window ${String(w).padStart(3)}: this ${a.toFixed(0).padStart(5)} µs  ${otherLabel} ${b.toFixed(0).padStart(5)} µs  ratio ${(a / b).toFixed(3)}\n`,
      );
    }
  } finally {
    stopped = true;
    await Promise.all(loops);
  }
  const sorted = [...ratios].sort((x, y) => x - y);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  process.stdout.write(
    `\nthis build: ${median(perReq.mine).toFixed(0)} µs/req, ${otherLabel}: ${median(perReq.base).toFixed(0)} µs/req (medians over the windows)\n` +
      `this / ${otherLabel}: median ${median(ratios).toFixed(3)} (middle half of the windows ${q(0.25).toFixed(3)}–${q(0.75).toFixed(3)})\n`,
  );
  for (const t of [mine, base]) {
    if (!t.ledgerCheck) continue; // the bare proxy keeps no ledger
    const check = await t.ledgerCheck();
    process.stdout.write(`ledger check (${t.label}): ${check.text} ${check.ok ? 'OK' : 'MISMATCH'}\n`);
    if (!check.ok) process.exitCode = 1;
  }
} finally {
  await stopAll();
}
