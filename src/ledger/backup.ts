import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { journalDirOf } from './file-charge-journal.js';

/** How many files `dir` holds (0 when there is no such directory). */
function filesIn(dir: string): number {
  try {
    return readdirSync(dir).length;
  } catch {
    return 0;
  }
}

/**
 * Copies the charge journal's files (file-charge-journal.ts) from `from` into `to`: the backup copies
 * them before and after the database, so that a charge made durable before the copy of the tables and
 * not yet in them is in one of the two (a file goes only once all its charges are in the tables; one
 * deleted between the two copies is kept from the first, one still there is taken again whole, as it
 * grew), and a start on the copy applies them, each once.
 */
function copyJournal(from: string, to: string): void {
  let names: string[];
  try {
    names = readdirSync(from).filter((n) => n.endsWith('.jsonl'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (names.length > 0) mkdirSync(to, { recursive: true });
  for (const name of names) {
    try {
      copyFileSync(join(from, name), join(to, name));
    } catch (err) {
      // Deleted meanwhile: its charges were all in the live tables by then (and the first copy has it).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * A consistent copy of a SQLite ledger while the gateway runs, with SQLite's online backup (copying
 * the file of a live WAL database can yield an empty or torn copy: the recent writes live in the
 * -wal file), and its charge journal's files beside it (`FILE-charges/`). PostgreSQL is backed up
 * with its own tools (pg_dump), not here.
 */
export async function backupLedger(databaseUrl: string, file: string): Promise<{ file: string; pages: number; journalFiles: number }> {
  if (!databaseUrl.startsWith('sqlite:')) {
    throw new Error('backup: the ledger is PostgreSQL: back it up with pg_dump (see the README, "Backups")');
  }
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === '' || path === ':memory:') throw new Error('backup: the ledger is in memory (sqlite::memory:): there is nothing on disk to back up');
  if (!existsSync(path)) throw new Error(`backup: no ledger at ${path}`);
  if (existsSync(file)) throw new Error(`backup: ${file} exists already; name a new file`);
  const [journal, journalCopy] = [journalDirOf(path), journalDirOf(file)];
  if (existsSync(journalCopy)) throw new Error(`backup: ${journalCopy} exists already; name a new file`);
  const db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  try {
    copyJournal(journal, journalCopy);
    const { totalPages } = await db.backup(file);
    copyJournal(journal, journalCopy);
    return { file, pages: totalPages, journalFiles: filesIn(journalCopy) };
  } finally {
    db.close();
  }
}
