import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { ManualClock } from '../../src/clock.js';
import { startTestGateway, type TestGateway } from './gateway.js';

/** A gateway on a SQLite file of its own (not :memory:, so that another connection can lock it). */
export async function gatewayOnSqliteFile(): Promise<{ gw: TestGateway; path: string }> {
  const path = join(mkdtempSync(join(tmpdir(), 'tg-sqlite-lock-')), 'ledger.db');
  return { gw: await startTestGateway({ database_url: `sqlite:${path}` }, new ManualClock(Date.now())), path };
}

/**
 * Runs `f` while another connection holds the file's write lock (as an operator's sqlite3 shell inside
 * BEGIN does), and lets the lock go once `f` is done, whatever it did.
 */
export async function whileWriteLocked<T>(path: string, f: () => Promise<T>): Promise<T> {
  const other = new BetterSqlite3(path);
  other.exec('BEGIN IMMEDIATE');
  try {
    return await f();
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
}

/**
 * Another process takes the file's write lock and lets it go after `ms`: resolves once it holds it,
 * with a promise of its release. In a process of its own, since better-sqlite3 waits for a lock on the
 * thread that asks for it.
 */
export function lockedByAnotherProcess(path: string, ms: number): Promise<{ released: Promise<void> }> {
  const code = `const D = require('better-sqlite3'); const d = new D(process.argv[1]); d.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n'); setTimeout(() => { d.exec('ROLLBACK'); d.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', code, path], { env: { ...process.env, NODE_PATH: resolve('node_modules') } });
  const released = new Promise<void>((done) => child.on('close', () => done()));
  return new Promise((ok, fail) => {
    child.stdout.once('data', () => ok({ released }));
    child.once('error', fail);
  });
}
