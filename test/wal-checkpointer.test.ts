import BetterSqlite3 from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, sqliteHandleOf } from '../src/ledger/database.js';
import { startWalCheckpointer, WalCheckpointer } from '../src/ledger/wal-checkpointer.js';

const dirs: string[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A SQLite file opened as the gateway opens its ledger, with a table to write to. */
function ledgerFile() {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-wal-'));
  dirs.push(dir);
  const file = join(dir, 'ledger.db');
  const db = openDatabase(`sqlite:${file}`);
  const sqlite = sqliteHandleOf(db)!;
  sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT)');
  const insert = sqlite.prepare('INSERT INTO t (payload) VALUES (?)');
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await db.destroy();
    if (sqlite.open) sqlite.close(); // Kysely closes only a handle it has used
  };
  cleanups.push(close);
  return { file, db, sqlite, write: () => insert.run('x'.repeat(3000)), close };
}

/** A checkpointer whose WAL holds more than its restartFrames (20) frames, none checkpointed yet. */
function pastRestartFrames() {
  const { db, write } = ledgerFile();
  const c = startWalCheckpointer(db, { everyWrites: 1_000, restartFrames: 20 })!;
  cleanups.push(() => c.close());
  for (let i = 0; i < 30; i++) write();
  return { c, write };
}

describe('WAL checkpoints on a thread of their own', () => {
  it('the writer stops checkpointing; the thread checkpoints every `everyWrites` writes and copies the whole WAL', async () => {
    const { db, sqlite, write } = ledgerFile();
    const c = startWalCheckpointer(db, { everyWrites: 3 })!;
    cleanups.push(() => c.close());
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0n);

    write();
    c.wrote();
    write();
    c.wrote();
    expect(c.started).toBe(0);
    write();
    c.wrote(); // the third: one is asked for
    expect(c.started).toBe(1);
    const result = await c.checkpoint(); // joins the one running
    expect(c.started).toBe(1);
    expect(result.log).toBeGreaterThan(0);
    expect(result.checkpointed).toBe(result.log);
  });

  it('a checkpoint with no write during it leaves the WAL to start over at the next write, which waits for nothing', async () => {
    const { c, write } = pastRestartFrames();
    const before = await c.checkpoint();
    expect(before.log).toBeGreaterThanOrEqual(20);
    expect(c.beforeWrite()).toBeUndefined();
    write(); // begins with every frame copied: the WAL starts over
    const after = await c.checkpoint();
    expect(after.log).toBeLessThanOrEqual(4);
  });

  it('past restartFrames, when the writer wrote during the checkpoint, its next write waits for a short one and starts the WAL over', async () => {
    const { c, write } = pastRestartFrames();
    const running = c.checkpoint();
    write(); // during it
    c.wrote();
    expect(c.beforeWrite()).toBeUndefined(); // never waits for the one running
    const before = await running;
    expect(before.log).toBeGreaterThanOrEqual(20);

    const asked = c.started;
    const wait = c.beforeWrite();
    expect(wait).toBeInstanceOf(Promise);
    expect(c.started).toBe(asked + 1); // the write waits for a checkpoint of its own
    await wait;
    expect(c.beforeWrite()).toBeUndefined(); // once
    write();
    const after = await c.checkpoint();
    expect(after.log).toBeLessThanOrEqual(4);
  });

  it('below restartFrames no write waits, even when the writer wrote during the checkpoint', async () => {
    const { db, write } = ledgerFile();
    const c = startWalCheckpointer(db, { everyWrites: 1_000, restartFrames: 10_000 })!;
    cleanups.push(() => c.close());
    for (let i = 0; i < 5; i++) write();
    const running = c.checkpoint();
    write(); // during it
    c.wrote();
    await running;
    expect(c.beforeWrite()).toBeUndefined();
  });

  it('close() stops the thread, whose connection, closed last, leaves every write in the database file', async () => {
    const { file, db, write, close } = ledgerFile();
    const c = startWalCheckpointer(db)!;
    for (let i = 0; i < 50; i++) {
      write();
      c.wrote();
    }
    await c.checkpoint(); // the thread's connection is open, as in a running gateway
    for (let i = 0; i < 10; i++) write(); // in the WAL only
    // As the gateway closes: the ledger's connection first, then the thread's, which is the last and
    // copies the whole WAL into the database file.
    await close();
    expect(existsSync(`${file}-wal`)).toBe(true);
    await c.close();
    await c.close(); // twice is fine
    await expect(c.checkpoint()).rejects.toThrow(/not running/);
    expect(existsSync(`${file}-wal`)).toBe(false);
    const reopened = new BetterSqlite3(file, { readonly: true });
    expect(reopened.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 60 });
    reopened.close();
  });

  it('a thread that fails hands checkpoints back to SQLite on the writer and says so', async () => {
    const { sqlite } = ledgerFile();
    const errors: Error[] = [];
    const told = new Promise<void>((resolve) => {
      const c = new WalCheckpointer(join(tmpdir(), 'no-such-dir-tollgate', 'missing.db'), sqlite, {
        onError: (err) => {
          errors.push(err);
          resolve();
        },
      });
      cleanups.push(() => c.close());
    });
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0n);
    await told;
    expect(errors[0]!.message).toMatch(/unable to open|directory does not exist|no such file/i);
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000n);
  });

  it('is not started for PostgreSQL-less in-memory databases', () => {
    const db = openDatabase('sqlite::memory:');
    cleanups.push(() => db.destroy());
    expect(startWalCheckpointer(db)).toBeUndefined();
  });
});
