import { existsSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';

/**
 * A consistent copy of a SQLite ledger while the gateway runs, with SQLite's online backup (copying
 * the file of a live WAL database can yield an empty or torn copy: the recent writes live in the
 * -wal file). PostgreSQL is backed up with its own tools (pg_dump), not here.
 */
export async function backupLedger(databaseUrl: string, file: string): Promise<{ file: string; pages: number }> {
  if (!databaseUrl.startsWith('sqlite:')) {
    throw new Error('backup: the ledger is PostgreSQL: back it up with pg_dump (see the README, "Backups")');
  }
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === '' || path === ':memory:') throw new Error('backup: the ledger is in memory (sqlite::memory:): there is nothing on disk to back up');
  if (!existsSync(path)) throw new Error(`backup: no ledger at ${path}`);
  if (existsSync(file)) throw new Error(`backup: ${file} exists already; name a new file`);
  const db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  try {
    const { totalPages } = await db.backup(file);
    return { file, pages: totalPages };
  } finally {
    db.close();
  }
}
