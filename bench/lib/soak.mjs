// The soak (`npm run bench:soak`, or `npm run bench -- --soak`): many concurrent slow streams through
// Tollgate for a while, sampling its RSS and event-loop delay (bench/cpu-probe.mjs, over IPC).
//
// The fake upstream streams slowly (a chunk every --soak-chunk-ms, --soak-chunks of them, so a stream
// lasts chunks × chunk-ms); --soak-streams clients each open a stream, read it to its end and open the
// next one. The clients start spread over one stream's duration (the ramp), so that streams end and
// new ones start at an even pace, not all in the same millisecond; from the end of the ramp all of them
// stream for --soak-s seconds. Then the open streams finish, and the ledger check compares what
// Tollgate charged with the streams it served.
// Verdict against issue 9's targets: RSS under 300 MB and flat, event-loop delay p99 under 20 ms.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { onStopAll, probe, startChild, stopAll, stopChild } from './children.mjs';
import { bodyFor, checkAnswer } from './load.mjs';
import { fmt, printMarkdown, printRows } from './report.mjs';
import { sharedStores, sharedStoresUnreachable } from './stores.mjs';
import { benchDir, root, startTollgate } from './targets.mjs';

const RSS_TARGET_MB = 300;
const ELD_TARGET_MS = 20;
/** RSS growth over the steady part of the run (second half against first) still called flat. */
const FLAT_GROWTH = 0.1;

const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes) => bytes / (1024 * 1024);

/** The soft limit on open files of this process (its children inherit it). */
function openFilesLimit() {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const n = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(n) ? n : Infinity;
  } catch {
    return Infinity;
  }
}

export async function soak({ streams, seconds, chunkMs, chunks, sampleS, deployments, deadlineS, pin, stores, json, markdown, windowMs, nodeFlags = [] }) {
  // Tollgate holds two sockets per stream (client and upstream), the fake upstream and this process one each.
  const needFiles = 2 * streams + 512;
  const limit = openFilesLimit();
  if (limit < needFiles) {
    throw new Error(`${streams} streams need about ${needFiles} open files per process; the limit here is ${limit} (raise it: ulimit -n ${needFiles})`);
  }
  const streamMs = chunks * chunkMs;
  const perDeploymentS = seconds + (2 * streamMs) / 1000 + 60; // ramp, full concurrency, the last streams, start and stop
  const deadline = setTimeout(
    () => {
      process.stderr.write('bench: over the soak deadline; stopping\n');
      stopAll().finally(() => process.exit(1));
    },
    (deadlineS ?? perDeploymentS * deployments.length + 30) * 1000,
  );
  deadline.unref();

  const tmp = mkdtempSync(path.join(tmpdir(), 'tollgate-soak-'));
  onStopAll(() => rmSync(tmp, { recursive: true, force: true }));
  const reports = [];
  let code = 0;
  try {
    const { match: up } = await startChild(
      'fake upstream (slow)',
      process.execPath,
      [path.join(benchDir, 'fake-upstream.mjs'), '--chunk-ms', String(chunkMs), '--chunks', String(chunks)],
      { ready: /listening (\d+)/, cpus: pin?.others, cwd: root },
    );
    const upstreamUrl = `http://127.0.0.1:${up[1]}`;
    process.stdout.write(
      `Tollgate soak — ${new Date().toISOString()}, node ${process.version}\n` +
        `${streams} concurrent slow streams (${chunks} chunks, one every ${chunkMs} ms: ${fmt(streamMs / 1000, 1)} s each) for ${seconds} s ` +
        `after a ${fmt(streamMs / 1000, 1)} s ramp, ` +
        `sampled every ${sampleS} s; targets: RSS < ${RSS_TARGET_MB} MB and flat, event-loop delay p99 < ${ELD_TARGET_MS} ms\n` +
        (pin ? `pinned: Tollgate on CPU ${pin.proxy}, load generator and fake upstream on CPU ${pin.others}\n` : 'not pinned to CPUs\n'),
    );

    for (const deployment of deployments) {
      if (deployment === 'postgres-redis') {
        const why = await sharedStoresUnreachable(stores);
        if (why) {
          process.stdout.write(`\nnote: the postgres-redis deployment is skipped: ${why}\n`);
          continue;
        }
      }
      const report = await soakOne({ deployment, streams, seconds, chunkMs, streamMs, sampleS, upstreamUrl, tmp, pin, stores, windowMs, nodeFlags });
      reports.push(report);
      if (!report.ledger.ok || report.failed > 0) code = 1;
    }

    process.stdout.write('\n');
    const summary = [
      ['deployment', 'streams served', 'failed', 'RSS max MB', 'RSS growth', 'ELD p99 ms', 'ELD max ms', 'RSS verdict', 'ELD verdict'],
      ...reports.map((r) => [
        r.deployment,
        fmt(r.completed),
        fmt(r.failed),
        fmt(r.rss_max_mb, 1),
        r.rss_growth === null ? 'n/a' : `${fmt(100 * r.rss_growth, 1)}%`,
        fmt(r.eld_p99_ms, 2),
        fmt(r.eld_max_ms, 2),
        r.rss_ok ? 'met' : 'not met',
        r.eld_ok ? 'met' : 'not met',
      ]),
    ];
    printRows(summary);
    if (markdown) {
      printMarkdown(summary);
      process.stdout.write('\n');
    }
    for (const r of reports) process.stdout.write(`ledger check (soak, ${r.label}): ${r.ledger.text} ${r.ledger.ok ? 'OK' : 'MISMATCH'}\n`);
    if (json) {
      writeFileSync(
        json,
        `${JSON.stringify({ date: new Date().toISOString(), node: process.version, streams, seconds, chunkMs, chunks, reports }, null, 2)}\n`,
      );
      process.stdout.write(`results written to ${json}\n`);
    }
  } finally {
    clearTimeout(deadline);
    await stopAll();
  }
  return code;
}

async function soakOne({ deployment, streams, seconds, chunkMs, streamMs, sampleS, upstreamUrl, tmp, pin, stores, windowMs, nodeFlags }) {
  let store;
  if (deployment === 'postgres-redis') {
    store = await sharedStores(stores, 'soak');
    onStopAll(store.drop);
  }
  const tg = await startTollgate({
    deployment,
    free: false,
    upstreamUrl,
    tmp,
    store,
    cpus: pin?.proxy,
    loadPool: { connections: 4 },
    windowMs,
    // one upstream connection per stream (and some to spare), so no stream waits for a connection
    connections: streams + 64,
    nodeFlags,
  });
  process.stdout.write(`\n${tg.label}:\n`);
  // A small completion cap keeps each stream's in-flight hold small, so that the in-flight budget
  // (half of BENCH_CREDITS here) admits every stream; the fake upstream ignores it and bills 20 tokens.
  const body = bodyFor(tg.model, 'sse', { max_tokens: 64 });
  const pool = new Pool(tg.base, { connections: streams, headersTimeout: 30_000, bodyTimeout: 4 * chunkMs + 30_000 });
  await probe(tg.child, 'eld-start');
  // The clients start spread over one stream's duration (the ramp), so that streams end, and new ones
  // start, at an even pace rather than all together; then all of them stream for `seconds`.
  const rampMs = streamMs;
  const t0 = performance.now();
  const endAt = t0 + rampMs + seconds * 1000;
  let open = 0;
  let completed = 0;
  let failed = 0;
  let firstError;
  const worker = async (i) => {
    await pause((rampMs * i) / streams);
    while (performance.now() < endAt && failed === 0) {
      open++;
      tg.sent++;
      try {
        const res = await pool.request({ method: 'POST', path: tg.path, headers: tg.headers, body });
        const text = await res.body.text();
        checkAnswer(tg, 'sse', res.statusCode, text);
        completed++;
      } catch (err) {
        failed++;
        firstError ??= err;
      } finally {
        open--;
      }
    }
  };

  const samples = [];
  const head = ['t s', 'RSS MB', 'heap MB', 'ELD p50 ms', 'ELD p99 ms', 'ELD max ms', 'open streams', 'served'];
  const line = (cells) => `${cells.map((c, i) => c.padStart(head[i].length + (i ? 2 : 0))).join('')}\n`;
  process.stdout.write(line(head));
  const sample = async () => {
    const m = await probe(tg.child, 'stats');
    const s = {
      t_s: (performance.now() - t0) / 1000,
      rss_mb: mb(m.mem.rss),
      heap_mb: mb(m.mem.heapUsed),
      eld_p50_ms: m.eld.p50,
      eld_p99_ms: m.eld.p99,
      eld_max_ms: m.eld.max,
      eld_total_p99_ms: m.eld.total_p99,
      eld_total_max_ms: m.eld.total_max,
      open,
      completed,
    };
    samples.push(s);
    process.stdout.write(
      line([fmt(s.t_s, 1), fmt(s.rss_mb, 1), fmt(s.heap_mb, 1), fmt(s.eld_p50_ms, 2), fmt(s.eld_p99_ms, 2), fmt(s.eld_max_ms, 2), fmt(open), fmt(completed)]),
    );
  };
  let sampling = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(sample).catch((err) => {
      firstError ??= err;
    });
  }, sampleS * 1000);
  await Promise.all(Array.from({ length: streams }, (_, i) => worker(i)));
  clearInterval(timer);
  await sampling;
  await sample(); // the last one, after the open streams finished
  await pause(200);
  const ledger = await tg.ledgerCheck(completed);
  await pool.destroy().catch(() => undefined);
  await Promise.all([tg.pool.destroy().catch(() => undefined), stopChild(tg.child)]);
  if (firstError) process.stdout.write(`error: ${failed} stream(s) failed; the first: ${firstError.message}\n`);

  // Verdict: the steady part is from a quarter of the way into the full-concurrency period to its end.
  const rampS = rampMs / 1000;
  const steady = samples.filter((s) => s.t_s >= rampS + seconds / 4 && s.t_s <= rampS + seconds + sampleS / 2);
  let growth = null;
  if (steady.length >= 2) {
    const half = Math.floor(steady.length / 2);
    const avg = (xs) => xs.reduce((a, s) => a + s.rss_mb, 0) / xs.length;
    const first = avg(steady.slice(0, half));
    growth = (avg(steady.slice(half)) - first) / first;
  }
  const rssMax = Math.max(...samples.map((s) => s.rss_mb));
  const last = samples[samples.length - 1];
  const report = {
    deployment,
    label: tg.label,
    streams,
    seconds,
    completed,
    failed,
    rss_max_mb: rssMax,
    rss_growth: growth,
    eld_p99_ms: last.eld_total_p99_ms,
    eld_max_ms: last.eld_total_max_ms,
    rss_ok: rssMax < RSS_TARGET_MB && growth !== null && growth <= FLAT_GROWTH,
    eld_ok: last.eld_total_p99_ms < ELD_TARGET_MS,
    samples,
    ledger,
  };
  process.stdout.write(
    `${tg.label}: RSS max ${fmt(rssMax, 1)} MB (target < ${RSS_TARGET_MB}), growth over the steady part ` +
      `${growth === null ? 'n/a (too few samples)' : `${fmt(100 * growth, 1)}%`} (flat: ≤ ${100 * FLAT_GROWTH}%), ` +
      `event-loop delay p99 ${fmt(report.eld_p99_ms, 2)} ms over the run (target < ${ELD_TARGET_MS}), max ${fmt(report.eld_max_ms, 2)} ms\n`,
  );
  return report;
}
