import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of a test's own (initdb into a temporary folder, a free port on 127.0.0.1,
 * trust authentication, user `postgres`), for tests that stop and start the server: the shared server
 * is never stopped. `url` names its `postgres` database.
 */
export interface PrivatePostgres {
  url: string;
  port: number;
  /** Stops the server (`pg_ctl stop`, fast by default: sessions are terminated, like a restart). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again, on the same port and data. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its folder. */
  destroy(): Promise<void>;
}

/** The folder holding initdb and pg_ctl (the newest /usr/lib/postgresql/N/bin), or undefined. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** Why private PostgreSQL tests cannot run here, or undefined when they can. */
export function privatePostgresMissing(): string | undefined {
  if (process.platform === 'win32') return 'private PostgreSQL clusters need a POSIX system';
  if (!postgresBinDir()) return 'initdb and pg_ctl were not found in /usr/lib/postgresql/*/bin';
  if (process.getuid?.() === 0 && !uidOf('postgres')) return 'running as root, and there is no "postgres" user to run the server as';
  return undefined;
}

function uidOf(user: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
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

/** Clusters still running, stopped at exit if a test did not destroy its own. */
const running = new Set<() => void>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const stop of running) stop();
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const missing = privatePostgresMissing();
  if (missing) throw new Error(`cannot start a private PostgreSQL: ${missing}`);
  const bin = postgresBinDir() as string;
  // PostgreSQL refuses to run as root: as root, the server runs as "postgres" in a folder it owns.
  const asUser = process.getuid?.() === 0 ? uidOf('postgres') : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  if (asUser) chownSync(dir, asUser.uid, asUser.gid);
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const cmd = (tool: string, args: string[]): [string, string[]] =>
    asUser ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
  const exec = async (tool: string, args: string[]) => {
    const [file, argv] = cmd(tool, args);
    await run(file, argv, { timeout: 60_000 });
  };

  await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c max_connections=200`;
  let up = false;
  const stopNow = () => {
    const [file, argv] = cmd('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
    try {
      execFileSync(file, argv, { stdio: 'ignore', timeout: 30_000 });
    } catch {
      // already stopped
    }
  };

  const start = async () => {
    await exec('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '60', '-o', serverOptions]);
    up = true;
    running.add(stopNow);
    installExitHook();
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    if (!up) return;
    await exec('pg_ctl', ['stop', '-D', data, '-m', mode, '-w', '-t', '60']);
    up = false;
    running.delete(stopNow);
  };

  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    async destroy() {
      try {
        await stop('immediate');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
