import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

/** Opens the ledger database named by `database_url` (sqlite:PATH, sqlite::memory:, postgres://…). */
export function openDatabase(url: string): Kysely<Database> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const memory = path === ':memory:' || path === '';
    if (!memory) mkdirSync(dirname(path), { recursive: true });
    const sqlite = new BetterSqlite3(memory ? ':memory:' : path);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.defaultSafeIntegers(true);
    return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // A pool error (a dropped idle connection) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
