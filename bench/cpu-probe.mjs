// Preloaded into each measured Node process (node --import ./bench/cpu-probe.mjs …) by bench/overhead.mjs.
// Answers IPC messages {id, cmd}:
//   cpu        → {id, cpu: process.cpuUsage()}  (user and system µs, every thread: µs resolution
//                instead of /proc's 10 ms ticks)
//   eld-start  → starts an event-loop delay monitor (perf_hooks.monitorEventLoopDelay, 10 ms
//                resolution; the delay reported is the time between two runs of its timer minus
//                those 10 ms); off until asked, so throughput runs do not pay for its timer
//   stats      → {id, cpu, mem: process.memoryUsage(), eld}: eld holds the delay (ms) since the
//                previous `stats` (p50, p99, max, mean) and since `eld-start` (p99, max)
//   gc-start   → starts recording every garbage collection (v8.GCProfiler)
//   gc-stop    → {id, gc}: what the collections since `gc-start` did: scavenges (young-generation
//                collections) and their pauses, the bytes allocated in the young generation between
//                them, the bytes they promoted to the old generation, and the full (mark-compact) ones;
//                gc.fullWindows: when each full collection ran, [from, to] in ms since the Unix epoch
//                (performance.timeOrigin + the entry's start), from the start of its incremental
//                marking (when one began within the 2 s before its pause) to the end of its pause
//   alloc-start → starts V8's sampling heap profiler (an allocation sampled about every 1 KB: node:inspector,
//                HeapProfiler.startSampling), keeping the samples of objects collected since, so that
//                it tells what was allocated, garbage included, not only what is still alive;
//                with {survivors: true}, only the samples of objects no scavenge collected (alive at
//                the end, or collected by a full collection, young garbage that one swept included)
//   alloc-stop {file} → writes the profile since `alloc-start` to `file` (a .heapprofile, which Chrome's
//                DevTools opens) and answers {id, ok}; with survivors, a scavenge runs first (what the
//                young generation still holds is not counted) and it answers the full collections
//                during the profile too ({fullGcs})
// The bare string "cpu" is answered with {cpu} too (older callers). It does nothing else; the
// process's own code is untouched.
import { writeFileSync } from 'node:fs';
import inspector from 'node:inspector';
import { PerformanceObserver, constants as perfConstants, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

/** The bytes used in the spaces named, from a GCProfiler record's heap space statistics. */
function used(spaces, names) {
  let n = 0;
  for (const s of spaces) if (names.includes(s.spaceName)) n += s.spaceUsedSize;
  return n;
}
const YOUNG = ['new_space', 'new_large_object_space'];
const OLD = ['old_space', 'large_object_space'];

/** A GCProfiler report summed: young bytes allocated between collections, promoted by scavenges, pauses (µs). */
function gcSummary(report) {
  const out = { scavenges: 0, scavengeUs: 0, allocated: 0, promoted: 0, majors: 0, majorUs: 0 };
  let youngAfter;
  for (const g of report.statistics) {
    const before = g.beforeGC.heapSpaceStatistics;
    const after = g.afterGC.heapSpaceStatistics;
    if (youngAfter !== undefined) out.allocated += Math.max(0, used(before, YOUNG) - youngAfter);
    youngAfter = used(after, YOUNG);
    if (g.gcType === 'Scavenge') {
      out.scavenges += 1;
      out.scavengeUs += g.cost;
      out.promoted += Math.max(0, used(after, OLD) - used(before, OLD));
    } else if (g.gcType === 'MarkSweepCompact') {
      out.majors += 1;
      out.majorUs += g.cost;
    }
  }
  return out;
}

/** The inspector session of the allocation profiler, opened at the first `alloc-start`. */
let session;
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

/**
 * When the full collections ran: a PerformanceObserver of 'gc' entries, each full one (MAJOR) as a window
 * from the start of the incremental marking before it (INCREMENTAL) to the end of its pause. On one core
 * the marking takes the core from the requests well before the pause (bench/README.md, sixteenth session).
 */
function fullGcWindows() {
  const windows = [];
  let markingFrom;
  const take = (entries) => {
    for (const e of entries) {
      const at = performance.timeOrigin + e.startTime;
      const kind = e.detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL) markingFrom = at;
      else if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) {
        windows.push([markingFrom !== undefined && at - markingFrom < 2000 ? markingFrom : at, at + e.duration]);
        markingFrom = undefined;
      }
    }
  };
  const observer = new PerformanceObserver((list) => take(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      // Entries of the last moments are handed over on the next tick: taken now, not lost.
      take(observer.takeRecords());
      observer.disconnect();
      return windows;
    },
  };
}

if (typeof process.send === 'function') {
  let fullGcs;
  let monitor;
  let total;
  let gcProfiler;
  const RESOLUTION_MS = 10;
  // The monitor records the time between two runs of its 10 ms timer; the delay is what exceeds 10 ms.
  const ms = (ns) => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);
  const eld = () => {
    if (!monitor) return null;
    const out = {
      p50: ms(monitor.percentile(50)),
      p99: ms(monitor.percentile(99)),
      max: ms(monitor.max),
      mean: ms(monitor.mean),
      total_p99: ms(total.percentile(99)),
      total_max: ms(total.max),
    };
    monitor.reset();
    return out;
  };
  /**
   * For `alloc-start {survivors}`: counts the full collections while the profile runs (the young
   * objects one of them sweeps are in the profile too, as collected by a major GC), and `stop()` runs a
   * scavenge first (V8's gc(), exposed for this), so that the young generation's garbage is out of it.
   */
  let survivors;
  let gc;
  const startSurvivors = () => {
    if (!gc) {
      v8.setFlagsFromString('--expose-gc');
      gc = vm.runInNewContext('gc');
    }
    let full = 0;
    const observer = new PerformanceObserver((list) => {
      count(list.getEntries());
    });
    const count = (entries) => {
      for (const e of entries) if (e.detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) full++;
    };
    observer.observe({ entryTypes: ['gc'] });
    return {
      stop() {
        gc({ type: 'minor' });
        count(observer.takeRecords());
        observer.disconnect();
        return full;
      },
    };
  };
  process.on('message', (msg) => {
    if (msg === 'cpu') {
      process.send({ cpu: process.cpuUsage() });
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    const { id, cmd } = msg;
    if (cmd === 'cpu') process.send({ id, cpu: process.cpuUsage() });
    else if (cmd === 'eld-start') {
      // Two monitors: one reset at each `stats`, one never (an ELD histogram cannot be added to another).
      monitor ??= monitorEventLoopDelay({ resolution: RESOLUTION_MS });
      total ??= monitorEventLoopDelay({ resolution: RESOLUTION_MS });
      monitor.enable();
      total.enable();
      process.send({ id, ok: true });
    } else if (cmd === 'stats') process.send({ id, cpu: process.cpuUsage(), mem: process.memoryUsage(), eld: eld() });
    else if (cmd === 'gc-start') {
      gcProfiler?.stop();
      gcProfiler = new v8.GCProfiler();
      gcProfiler.start();
      fullGcs?.stop();
      fullGcs = fullGcWindows();
      process.send({ id, ok: true });
    } else if (cmd === 'gc-stop') {
      const report = gcProfiler?.stop();
      gcProfiler = undefined;
      const fullWindows = fullGcs?.stop() ?? [];
      fullGcs = undefined;
      process.send({ id, gc: report ? { ...gcSummary(report), fullWindows } : null });
    } else if (cmd === 'alloc-start') {
      if (!session) {
        session = new inspector.Session();
        session.connect();
      }
      survivors = msg.survivors === true ? startSurvivors() : undefined;
      post('HeapProfiler.enable')
        .then(() =>
          post('HeapProfiler.startSampling', {
            samplingInterval: 1024,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: msg.survivors !== true,
          }),
        )
        .then(
          () => process.send({ id, ok: true }),
          (err) => process.send({ id, error: String(err) }),
        );
    } else if (cmd === 'alloc-stop') {
      // What the young generation still holds has outlived no scavenge yet: one runs before the profile ends.
      const fullGcs = survivors?.stop();
      survivors = undefined;
      post('HeapProfiler.stopSampling').then(
        ({ profile }) => {
          writeFileSync(msg.file, JSON.stringify(profile));
          process.send({ id, ok: true, fullGcs });
        },
        (err) => process.send({ id, error: String(err) }),
      );
    }
  });
  // The IPC channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
