import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Before the suite: the CLI tests run the built `dist/cli.js`, as a user would, so it is built once.
 * The run gets a temp folder of its own (TMPDIR, which the test workers and the processes they start
 * inherit), removed when the suite ends, so that no test's files are left behind in /tmp.
 */
export default function setup(): () => void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'tg-'));
  // Traversable by the other users a test runs a server as (a private PostgreSQL runs as "postgres").
  chmodSync(dir, 0o755);
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
