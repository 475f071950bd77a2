import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * A redis-server of a test's own (no persistence, a free port on 127.0.0.1), for tests that pause or
 * stop the server: the shared Redis is never paused or stopped. Stopped by its PID.
 */
export interface PrivateRedis {
  url: string;
  /** SIGSTOP: the server keeps its connections open and answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT: it answers again, and what it was sent meanwhile is processed. */
  resume(): void;
  /** Stops it (SIGKILL after SIGCONT) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Why private Redis tests cannot run here, or undefined when they can. */
export function privateRedisMissing(): string | undefined {
  if (process.platform === 'win32') return 'private Redis servers need a POSIX system';
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Starts one; `args` are added to redis-server's (e.g. `['--requirepass', pw]`). */
export async function startPrivateRedis(args: string[] = []): Promise<PrivateRedis> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const p of running) p.kill('SIGKILL');
    });
  }
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${out}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    pause: () => proc.kill('SIGSTOP'),
    resume: () => proc.kill('SIGCONT'),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGCONT');
        proc.kill('SIGKILL');
      }
      await exited;
      running.delete(proc);
    },
  };
}
