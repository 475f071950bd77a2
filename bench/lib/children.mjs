// Child processes of a bench run: every one is tracked and stopped by its PID, whatever happens
// (a normal end, an error, Ctrl-C, a deadline). Also CPU pinning with taskset and the IPC probe
// (bench/cpu-probe.mjs) that measured Node processes preload.
import { execFileSync, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
/** Every child started, for their last output when something fails. */
export const started = [];
/** Run by stopAll after the children are gone (temp dirs, databases). */
const cleanups = [];

export function onStopAll(fn) {
  cleanups.push(fn);
}

/**
 * CPU pinning: the measured proxy gets the last CPU to itself; the load generator (this process) and
 * the fake upstream share the others. Without it they compete for the cores and the proxy's CPU per
 * request swings with how its work happens to be batched. Returns undefined when not pinning.
 */
/** CPUs this process may use when it starts (before pinning() narrows it to the others). */
export const NCPU = availableParallelism();

export function pinning(mode, die) {
  const ncpu = NCPU;
  if (mode === 'off' || ncpu < 2) {
    if (mode === 'on') die('--pin on needs at least 2 CPUs');
    return undefined;
  }
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    if (mode === 'on') die('--pin on needs taskset (util-linux)');
    return undefined;
  }
  const pin = { proxy: String(ncpu - 1), others: ncpu === 2 ? '0' : `0-${ncpu - 2}` };
  execFileSync('taskset', ['-a', '-c', '-p', pin.others, String(process.pid)], { stdio: 'ignore' });
  return pin;
}

export function running(child) {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Starts `cmd args` (run by `wrap`, a command and its arguments such as valgrind's, when given; under
 * `taskset -c cpus` when given; taskset and valgrind exec in place, so the PID is the command's) and
 * resolves once `ready` (a RegExp) matches its stdout, or once `readyCheck()` (polled every 100 ms)
 * resolves true. Rejects if it exits first or is not ready within `timeoutMs`.
 */
export function startChild(name, cmd, args, { ready, readyCheck, ipc = false, cpus, env = process.env, timeoutMs = 30_000, cwd, wrap = [] } = {}) {
  const [run, runArgs] = wrap.length > 0 ? [wrap[0], [...wrap.slice(1), cmd, ...args]] : [cmd, args];
  const [file, argv] = cpus ? ['taskset', ['-c', cpus, run, ...runArgs]] : [run, runArgs];
  const child = spawn(file, argv, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
    env: { ...env, NODE_OPTIONS: '' },
  });
  children.add(child);
  started.push(child);
  child.name = name;
  child.output = '';
  child.pending = new Map();
  child.nextId = 1;
  if (ipc) {
    child.on('message', (m) => {
      const p = m && typeof m === 'object' ? child.pending.get(m.id) : undefined;
      if (p) {
        child.pending.delete(m.id);
        p(m);
      }
    });
  }
  const keep = (d) => {
    child.output = (child.output + d).slice(-16_384);
  };
  child.stderr.on('data', keep);
  return new Promise((resolve, reject) => {
    let settled = false;
    let poll;
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${timeoutMs / 1000} s`)), timeoutMs);
    const onExit = (code, signal) => fail(new Error(`${name} exited during start-up (code ${code}, signal ${signal})`));
    const done = (value, err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(poll);
      child.off('exit', onExit);
      if (err) reject(Object.assign(err, { output: child.output }));
      else resolve(value);
    };
    const fail = (err) => done(undefined, err);
    child.once('exit', onExit);
    child.stdout.on('data', (d) => {
      keep(d);
      const m = settled || !ready ? null : ready.exec(child.output);
      if (m) done({ child, match: m });
    });
    if (readyCheck) {
      const check = async () => {
        if (settled) return;
        if (await readyCheck().catch(() => false)) done({ child, match: null });
        else if (!settled) poll = setTimeout(check, 100);
      };
      poll = setTimeout(check, 50);
    }
  });
}

/** SIGTERM by PID, then SIGKILL after a grace period. */
export async function stopChild(child, graceMs = 12_000) {
  if (running(child)) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, graceMs, 'timeout')));
    const outcome = await Promise.race([exited, timeout]);
    clearTimeout(timer); // else it would keep this process alive for the rest of the grace period
    if (outcome === 'timeout' && running(child)) {
      process.stderr.write(`bench: ${child.name} (pid ${child.pid}) ignored SIGTERM; killing it\n`);
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    }
  }
  children.delete(child);
}

export async function stopAll() {
  await Promise.all([...children].map((c) => stopChild(c)));
  for (const fn of cleanups.splice(0)) {
    try {
      await fn();
    } catch (err) {
      process.stderr.write(`bench: clean-up failed: ${err.message}\n`);
    }
  }
}

/** No child outlives this process: SIGKILL on exit, stop everything on a signal. */
export function installExitHandlers() {
  process.on('exit', () => {
    for (const c of children) {
      if (running(c)) {
        try {
          process.kill(c.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      process.stderr.write(`bench: ${sig}, stopping\n`);
      stopAll().finally(() => process.exit(130));
    });
  }
}

/** Prints the last output of every child (after a failure). */
export function dumpChildren() {
  for (const c of started) if (c.output) process.stderr.write(`--- ${c.name} (last output) ---\n${c.output}\n`);
}

/**
 * Asks a child that preloads bench/cpu-probe.mjs: `cpu` → {cpu: {user, system}} (µs);
 * `stats` → {cpu, mem: process.memoryUsage(), eld}; `eld-start` → starts the event-loop delay monitor;
 * the others as cpu-probe.mjs lists them (`args`: the command's fields, such as `file`). Rejects when
 * the probe answers an error.
 */
export function probe(child, cmd, timeoutMs = 5_000, args = {}) {
  return new Promise((resolve, reject) => {
    const id = child.nextId++;
    const timer = setTimeout(() => {
      child.pending.delete(id);
      reject(new Error(`${child.name}: no answer from the probe (${cmd})`));
    }, timeoutMs);
    child.pending.set(id, (m) => {
      clearTimeout(timer);
      if (m.error) reject(new Error(`${child.name}: the probe failed (${cmd}): ${m.error}`));
      else resolve(m);
    });
    child.send({ id, cmd, ...args });
  });
}
