// Preloaded into each measured Node process (node --import ./bench/cpu-probe.mjs …) by bench/overhead.mjs.
// Answers IPC messages {id, cmd}:
//   cpu        → {id, cpu: process.cpuUsage()}  (user and system µs, every thread: µs resolution
//                instead of /proc's 10 ms ticks)
//   eld-start  → starts an event-loop delay monitor (perf_hooks.monitorEventLoopDelay, 10 ms
//                resolution; the delay reported is the time between two runs of its timer minus
//                those 10 ms); off until asked, so throughput runs do not pay for its timer
//   stats      → {id, cpu, mem: process.memoryUsage(), eld}: eld holds the delay (ms) since the
//                previous `stats` (p50, p99, max, mean) and since `eld-start` (p99, max)
// The bare string "cpu" is answered with {cpu} too (older callers). It does nothing else; the
// process's own code is untouched.
import { monitorEventLoopDelay } from 'node:perf_hooks';

if (typeof process.send === 'function') {
  let monitor;
  let total;
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
  });
  // The IPC channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
