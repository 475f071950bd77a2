import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { sqliteHandleOf } from './database.js';
import type { Database } from './schema.js';
import { walCheckpointerOf } from './wal-checkpointer.js';

/**
 * Runs `run`, one synchronous write of the ledger's hot path (a group commit, a journal append), on
 * the SQLite handle under `db`, as its WAL checkpointer asks (wal-checkpointer.ts: it may first wait
 * for a checkpoint, and is told of the write). Never inside a transaction of Kysely's: while none is
 * open on the handle it runs at once, whole, so nothing else can run on the handle before it ends
 * (taking Kysely's connection first costs a promise chain and a Kysely instance a write); while one is
 * open (an admin write awaiting between its statements) it waits for Kysely's connection, so as not to
 * land inside that transaction.
 */
export async function writeOnHandle<T>(db: Kysely<Database>, run: (sqlite: BetterSqlite3.Database) => T): Promise<T> {
  const sqlite = sqliteHandleOf(db);
  if (!sqlite) throw new Error('a SQLite write of the ledger needs a database opened by openDatabase');
  const checkpointer = walCheckpointerOf(sqlite);
  // The WAL may be due to start over: the write then waits for a checkpoint first.
  const checkpointed = checkpointer?.beforeWrite();
  if (checkpointed) await checkpointed;
  const written = sqlite.inTransaction ? await db.connection().execute(async () => run(sqlite)) : run(sqlite);
  checkpointer?.wrote();
  return written;
}
