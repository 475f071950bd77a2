import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type PostgresPool } from 'kysely';
import pg from 'pg';
import { preparedStatementName } from './prepared-query.js';
import type { Database } from './schema.js';
import { retriedWhileBusy } from './while-busy.js';

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
 * A pg pool whose connections run the statements written once (preparedQuery) as named prepared
 * statements: PostgreSQL parses and plans each once a connection instead of on every run (the group
 * commit's planning cost more than its execution: ~1 ms of the ~1.7 ms a lone commit took here).
 * Every other query is sent as it was. A pooler between the gateway and PostgreSQL must keep prepared
 * statements per server connection (PgBouncer: session pooling, or `max_prepared_statements` ≥ 1 in
 * transaction pooling, 1.21 and later).
 */
function withNamedStatements(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      return {
        // Kysely passes SQL text and its parameters, or a cursor (streamed reads), which goes as it is.
        query: ((text: string, values?: unknown[]) => {
          const name = preparedStatementName(text);
          return name ? client.query({ name, text, values }) : client.query(text, values);
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
}
type PostgresPoolClient = Awaited<ReturnType<PostgresPool['connect']>>;

/** The better-sqlite3 handle of each SQLite database openDatabase opened (the group commit runs on it: sqlite-commit-writer.ts). */
const sqliteHandles = new WeakMap<Kysely<Database>, BetterSqlite3.Database>();

/** The better-sqlite3 handle under `db`, when openDatabase opened it on SQLite. */
export function sqliteHandleOf(db: Kysely<Database>): BetterSqlite3.Database | undefined {
  return sqliteHandles.get(db);
}

/**
 * How long a SQLite statement waits for another connection's write lock (an operator's sqlite3 shell
 * inside BEGIN, a CLI verb, another process's commit). better-sqlite3 waits on the thread that runs
 * it: a gateway's event loop answers nothing meanwhile, not even /health or a running stream. While
 * starting, and in a CLI verb (which serves nothing), a write outlasts a short lock; once the gateway
 * listens, a write waits a moment and then fails as `ledger_unavailable` (a group commit keeps its
 * charges, durable in the journal, and tries again a second later; an admin write is a 503 with
 * Retry-After).
 */
export const SQLITE_BUSY_MS = { starting: 5000, serving: 50 } as const;

/** From here on `db` serves requests: on SQLite, a write lock held elsewhere is waited for only briefly (SQLITE_BUSY_MS). */
export function servingFrom(db: Kysely<Database>): void {
  sqliteHandleOf(db)?.pragma(`busy_timeout = ${SQLITE_BUSY_MS.serving}`);
}

/**
 * How long the ledger waits on PostgreSQL (CONTRACT §8: nothing waits on it past 5 s). A read also has
 * a deadline of its own in KyselyLedger, for a server that does not answer at all.
 */
export const POSTGRES_LIMITS = {
  /** A new connection, or a free one from the pool. */
  connectMs: 2000,
  /** One statement, on the server. The ledger's are small: a group commit is one statement of at most 2,000 charges. */
  statementMs: 2000,
  /** A transaction open with no statement running. */
  idleInTransactionMs: 10_000,
} as const;

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
    // The busy timeout first: switching a new file to WAL takes its lock, and another process opening
    // the same new file at once (two starts on a fresh data folder) holds it for a moment. When both
    // ask for it together SQLite fails one at once, busy timeout or not: that one tries again.
    sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_MS.starting}`);
    if (!readOnly) retriedWhileBusy(() => sqlite.pragma('journal_mode = WAL'), SQLITE_BUSY_MS.starting);
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.defaultSafeIntegers(true);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    sqliteHandles.set(db, sqlite);
    return db;
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: POSTGRES_LIMITS.connectMs,
    // Server-side bounds, set on every session: a statement (a lock wait included) is cancelled past
    // statementMs; a transaction left open by a stalled process is ended, freeing its row locks.
    statement_timeout: POSTGRES_LIMITS.statementMs,
    idle_in_transaction_session_timeout: POSTGRES_LIMITS.idleInTransactionMs,
    keepAlive: true,
  });
  // A connection the server ends (a restart, a crash, a network cut) emits 'error' on its client, idle
  // or checked out; with no listener that kills the process. The pool listens on idle clients; every
  // client gets a listener of its own for the time it is checked out. The query running on it fails
  // (and is answered ledger_unavailable); the pool drops the client when it is released.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: withNamedStatements(pool) }) });
}
