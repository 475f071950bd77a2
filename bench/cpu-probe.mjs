// Preloaded into each measured proxy (node --import ./bench/cpu-probe.mjs …) by bench/overhead.mjs:
// answers the IPC message "cpu" with this process's process.cpuUsage() (user and system µs, every
// thread), so the benchmark reads CPU time at µs resolution instead of /proc's 10 ms ticks. It does
// nothing else; the proxy's own code is untouched.
if (typeof process.send === 'function') {
  process.on('message', (msg) => {
    if (msg === 'cpu') process.send({ cpu: process.cpuUsage() });
  });
}
