// The load: a closed loop (N workers, each sending its next request as soon as the last answer is read
// in full) for throughput and CPU per request, and an open loop (requests sent on a fixed schedule,
// whatever the answers) for latency at a given rate. Every answer is checked; one bad answer stops the run.
import { Pool } from 'undici';

const prompt =
  'I am planning a three-day trip to Paris in early spring and would like some help. ' +
  'Please suggest an itinerary that balances museums, walking tours and good food, and keep travel ' +
  'between places short. I prefer quiet mornings, one big museum per day at most, and I would like ' +
  'at least one evening by the river. Tell me which neighbourhoods are best to stay in for this plan, ' +
  'roughly what a mid-range hotel costs there, and whether a museum pass is worth it for three days. ' +
  'If it rains on one of the days, what indoor alternatives would you recommend instead of the ' +
  'walking tour? Also list two or three bakeries or small restaurants near each stop, and one thing ' +
  'that most visitors miss but locals like. Keep the answer short and practical, with times of day.';

const bodies = new Map();
/** The chat request (904 bytes with the paid model): system + user message, no max_tokens unless given. */
export function bodyFor(model, mode, extra = {}) {
  const key = `${model}|${mode}|${JSON.stringify(extra)}`;
  let b = bodies.get(key);
  if (!b) {
    b = Buffer.from(
      JSON.stringify({
        model,
        messages: [
          { role: 'system', content: 'You are a concise travel assistant.' },
          { role: 'user', content: prompt },
        ],
        temperature: 0.7,
        ...(mode === 'sse' ? { stream: true } : {}),
        ...extra,
      }),
    );
    bodies.set(key, b);
  }
  return b;
}

export function checkAnswer(target, mode, status, text) {
  const ok =
    status === 200 &&
    (mode === 'sse'
      ? text.endsWith('data: [DONE]\n\n') && text.includes('"usage"')
      : text.includes('"usage"') && (!target.expectCost || text.includes('"cost"')));
  if (!ok) throw new Error(`${target.label} ${mode}: unexpected answer ${status}: ${text.slice(0, 400)}`);
}

/** One request to `target` through `pool`, its answer read in full and checked. */
export async function one(pool, target, mode, body) {
  const res = await pool.request({ method: 'POST', path: target.path, headers: target.headers, body });
  const text = await res.body.text();
  checkAnswer(target, mode, res.statusCode, text);
}

/** Closed loop: `n` requests from `concurrency` workers. Latencies in ms, request sent to last byte read. */
export async function runLoad(target, mode, n, concurrency) {
  const latencies = new Float64Array(n);
  const body = bodyFor(target.model, mode);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const t0 = performance.now();
      target.sent++;
      await one(target.pool, target, mode, body);
      latencies[i] = performance.now() - t0;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return { elapsedMs: performance.now() - t0, latencies };
}

/**
 * A proxy's warm-up: `requests` through it (closed loop), and more until it has lasted `ms`, in pieces
 * of at most WARMUP_PIECE with what the bench does between measured rounds after each (its CPU read
 * through the probe, what the piece spent credited back through the admin API).
 * The duration matters as much as the count: only once the first answers' settlement window has passed does
 * each request also expire a settling hold, and V8 compiles that code when it first runs; inside the
 * measured rounds, it would be counted there (bench/README.md, twentieth session). The pieces matter too:
 * a warm-up in one piece never sent the admin calls and probe reads the rounds are separated by, so the
 * first rounds deoptimised and compiled again what those calls reach (Node's HTTP server, the ledger's
 * commit path): 17 µs a stream of JIT compiler in the measured rounds, 3 µs after a warm-up in pieces
 * (perf, thirty-second session). What each piece spent goes back on the bench account's balance (a
 * warm-up of several seconds on a quick host spends tens of credits, and the in-flight budget, half the
 * balance, would shrink under the settling answers' holds).
 */
export async function warmUp(target, mode, { requests, ms, concurrency }) {
  const started = performance.now();
  let sent = 0;
  while (sent < requests || (sent > 0 && performance.now() - started < ms)) {
    const n = Math.min(WARMUP_PIECE, sent < requests ? requests - sent : WARMUP_PIECE);
    await runLoad(target, mode, n, concurrency);
    await target.cpu?.();
    await target.creditBack?.(n);
    sent += n;
  }
}

/** The requests of a warm-up's piece (warmUp). */
const WARMUP_PIECE = 2000;

/** The open loop's own connections to a target: enough that no request waits for one. */
export function latencyPool(target) {
  target.latencyPool ??= new Pool(target.base, { connections: 256, headersTimeout: 10_000, bodyTimeout: 10_000 });
  return target.latencyPool;
}

/**
 * Open loop: `rate` requests per second for `seconds`, each sent at its scheduled time (timers
 * have 1 ms granularity: requests that fall due together are sent together) whatever the earlier
 * answers. Latency is from the moment a request is sent to its last byte. `behindMs` is how late
 * the load generator itself fell behind the schedule at worst (large: the figures mean little).
 */
export async function runOpenLoop(target, mode, rate, seconds) {
  const total = Math.max(1, Math.round(rate * seconds));
  const latencies = new Float64Array(total);
  // When each request was sent, in ms since the Unix epoch (the clock of the probe's GC windows).
  const sent = new Float64Array(total);
  const body = bodyFor(target.model, mode);
  const pool = latencyPool(target);
  const interval = 1000 / rate;
  let issued = 0;
  let done = 0;
  let behindMs = 0;
  const t0 = performance.now();
  await new Promise((resolve, reject) => {
    let failed = false;
    const fire = (i) => {
      const sentAt = performance.now();
      sent[i] = performance.timeOrigin + sentAt;
      target.sent++;
      one(pool, target, mode, body).then(
        () => {
          latencies[i] = performance.now() - sentAt;
          if (++done === total) resolve();
        },
        (err) => {
          failed = true;
          reject(err);
        },
      );
    };
    const tick = () => {
      if (failed) return;
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - t0) / interval) + 1);
      if (issued < due) behindMs = Math.max(behindMs, now - (t0 + issued * interval));
      while (issued < due) fire(issued++);
      if (issued < total) setTimeout(tick, Math.max(0, t0 + issued * interval - performance.now()));
    };
    tick();
  });
  return { elapsedMs: performance.now() - t0, latencies, sent, behindMs, rate: (total * 1000) / (performance.now() - t0) };
}
