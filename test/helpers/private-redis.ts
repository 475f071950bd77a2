import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A redis-server of the test's own, on a free loopback port, with no persistence: the fault tests pause,
 * kill and restart it, which they may never do to the shared Redis. Every signal goes to its PID only.
 */
export interface PrivateRedis {
  url: string;
  port: number;
  /** The server's PID now (a restart changes it). */
  readonly pid: number;
  /** SIGSTOP: the server keeps its connections open but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT: it answers again, with everything it had. */
  resume(): void;
  /** Kills it (SIGKILL) and starts it again, empty, on the same port; resolves once it accepts connections. */
  restart(): Promise<void>;
  /** Kills it and removes its folder. Safe to call twice, and while paused. */
  stop(): Promise<void>;
}

/** Whether `redis-server` is on PATH; tests that need a private Redis are skipped without it. */
export const redisServerAvailable: boolean = process.platform !== 'win32' && spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Why private Redis tests cannot run here, or undefined when they can. */
export function privateRedisMissing(): string | undefined {
  if (process.platform === 'win32') return 'private Redis servers need a POSIX system (SIGSTOP, SIGCONT)';
  if (!redisServerAvailable) return 'redis-server is not on PATH: install Redis to run the tests that pause or restart a private Redis';
  return undefined;
}

if (!redisServerAvailable) {
  process.stderr.write(`note: ${privateRedisMissing()}; those tests are skipped\n`);
}

/** Servers still running when the test process exits (a test that failed before its cleanup): killed by PID. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(proc: ChildProcess): void {
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const p of running) p.kill('SIGKILL');
  });
}

/** A loopback port that was free a moment ago (the kernel picks it; the socket is closed before use). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const READY = /Ready to accept connections/;
const START_TIMEOUT_MS = 10_000;

/** Starts redis-server on `port` in `dir`; resolves once it says it accepts connections. */
function launch(port: number, dir: string, args: readonly string[]): Promise<ChildProcess> {
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'notice', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  track(proc);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`redis-server on port ${port} did not start within ${START_TIMEOUT_MS} ms: ${out}`));
    }, START_TIMEOUT_MS);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (READY.test(out)) {
        clearTimeout(timer);
        proc.stdout?.off('data', onData);
        proc.stderr?.off('data', onData);
        // Keep draining its output so that it never blocks on a full pipe.
        proc.stdout?.resume();
        proc.stderr?.resume();
        resolve(proc);
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on port ${port} exited (${code ?? signal}) before it was ready: ${out}`));
    });
  });
}

/** Kills one process by its PID (SIGKILL ends a stopped process too) and waits for it to be gone. */
async function kill(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGKILL');
  await gone;
}

/** `args`: more redis-server options (e.g. `--requirepass`), kept across restarts. */
export async function startPrivateRedis(args: readonly string[] = []): Promise<PrivateRedis> {
  const missing = privateRedisMissing();
  if (missing) throw new Error(`cannot start a private Redis: ${missing}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  let port = await freePort();
  let proc: ChildProcess;
  try {
    proc = await launch(port, dir, args);
  } catch {
    // Someone took the port between the probe and the start: one more try on another one.
    port = await freePort();
    proc = await launch(port, dir, args);
  }
  let stopped = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return proc.pid as number;
    },
    pause() {
      proc.kill('SIGSTOP');
    },
    resume() {
      proc.kill('SIGCONT');
    },
    async restart() {
      await kill(proc);
      proc = await launch(port, dir, args);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
