import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

/**
 * better-sqlite3 with its prepared statements kept by SQL text: Kysely prepares every query it runs,
 * and preparing costs more than running the small statements the ledger uses.
 */
function withStatementCache(db: BetterSqlite3.Database): BetterSqlite3.Database {
  const cache = new Map<string, BetterSqlite3.Statement>();
  const prepare = db.prepare.bind(db);
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (!stmt) {
            stmt = prepare(source);
            if (cache.size < 500) cache.set(source, stmt);
          }
          return stmt;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Opens the ledger database named by `database_url` (sqlite:PATH, sqlite::memory:, postgres://…).
 * `readOnly` (SQLite) opens an existing file without writing: no directory or file is created.
 */
export function openDatabase(url: string, options: { readOnly?: boolean } = {}): Kysely<Database> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const memory = path === ':memory:' || path === '';
    const readOnly = options.readOnly === true && !memory;
    if (!memory && !readOnly) mkdirSync(dirname(path), { recursive: true });
    const sqlite = new BetterSqlite3(memory ? ':memory:' : path, readOnly ? { readonly: true, fileMustExist: true } : {});
    if (!readOnly) sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.defaultSafeIntegers(true);
    return new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // A pool error (a dropped idle connection) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
