// CPU time of a process from /proc: for processes that cannot preload bench/cpu-probe.mjs (nginx),
// and as a cross-check of the probe's figures for those that do.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** user + system time of a process, every thread (µs, in steps of 1/CLK_TCK s: 10 ms here). */
export function procStatCpuUs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK; // utime + stime
}

/**
 * Time on CPU of a process's main thread, from /proc/PID/schedstat (ns, so µs-exact), or undefined
 * where the kernel does not keep it. Right for single-threaded processes (an nginx worker).
 */
export function schedstatCpuUs(pid) {
  try {
    const [ns] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/);
    const n = Number(ns);
    return Number.isFinite(n) ? n / 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The PIDs of a process's children (nginx's workers under its master). */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // No /proc/PID/task/TID/children on this kernel: scan /proc for processes whose parent is pid.
    const out = [];
    for (const name of execFileSync('ls', ['/proc'], { encoding: 'utf8' }).split('\n')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }
}

/**
 * CPU time of a process and its children (nginx: master and workers): `us` from schedstat where the
 * kernel keeps it (ns resolution), else from /proc/PID/stat; `procUs` always from /proc/PID/stat.
 * A child that exits between two readings takes its time with it: nginx's workers live as long as
 * the master.
 */
export function treeCpuUs(pid) {
  const pids = [pid, ...childPids(pid)];
  let us = 0;
  let procUs = 0;
  let exact = true;
  for (const p of pids) {
    try {
      const s = procStatCpuUs(p);
      procUs += s;
      const e = schedstatCpuUs(p);
      if (e === undefined) exact = false;
      us += e ?? s;
    } catch {
      // exited meanwhile
    }
  }
  return { us, procUs, exact };
}

/**
 * CPU time (µs, from each thread's schedstat: ns resolution) of every process on this machine whose
 * command name is one of `names` (`postgres`, `redis-server`), by name and process id: what the
 * postgres-redis deployment's servers spend, which Tollgate's own CPU leaves out (serversCpuSpent
 * takes two readings apart). Empty where /proc is not there.
 */
export function serversCpuReading(names) {
  const out = Object.fromEntries(names.map((n) => [n, new Map()]));
  let pids;
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return {};
  }
  for (const pid of pids) {
    try {
      const name = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (!(name in out)) continue;
      let us = 0;
      for (const tid of readdirSync(`/proc/${pid}/task`)) us += schedstatCpuUs(`${pid}/task/${tid}`) ?? 0;
      out[name].set(pid, us);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * What the servers spent between two readings, µs by name: each process of `after` from its reading in
 * `before`, or from its start when it started since (a connection's new backend). One that exited
 * meanwhile took its time with it and counts nothing, never less than nothing (another server on the
 * machine stopping must not make the figure negative).
 */
export function serversCpuSpent(before, after) {
  const out = {};
  for (const [name, procs] of Object.entries(after)) {
    out[name] = 0;
    for (const [pid, us] of procs) out[name] += Math.max(0, us - (before[name]?.get(pid) ?? 0));
  }
  return out;
}
