import { Migrator, PostgresAdapter, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { closeSync, fchmodSync, fchownSync, openSync, statSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { sqliteHandleOf } from './database.js';

/**
 * Migrations, written once with Kysely's schema builder so they run on SQLite and PostgreSQL.
 * Exported for tests that start from an older schema.
 */
export const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('total_purchased', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('total_usage', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('free_model_limits_exempt', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('credit_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('credit_entries_account').on('credit_entries').column('account_id').execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('hash', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('limit_amount', 'bigint')
        .addColumn('limit_reset', 'text')
        .addColumn('include_byok_in_limit', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();
      await db.schema
        .createTable('key_usage')
        .addColumn('key_hash', 'text', (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('usage', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('byok_usage', 'bigint', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('key_usage_pk', ['key_hash', 'period'])
        .execute();
      await db.schema
        .createTable('byok_secrets')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('ciphertext', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('byok_secrets_pk', ['account_id', 'provider'])
        .execute();
      await db.schema
        .createTable('generations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('tokens_prompt', 'integer', (c) => c.notNull())
        .addColumn('tokens_completion', 'integer', (c) => c.notNull())
        .addColumn('total_cost', 'bigint', (c) => c.notNull())
        .addColumn('byok_usage', 'bigint', (c) => c.notNull())
        .addColumn('is_byok', 'integer', (c) => c.notNull())
        .addColumn('streamed', 'integer', (c) => c.notNull())
        .addColumn('cancelled', 'integer', (c) => c.notNull())
        .addColumn('finish_reason', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('generations_account').on('generations').column('account_id').execute();
      await db.schema
        .createTable('settings')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0002_generation_usage_source': {
    // Where a generation's token counts came from: "upstream" (the provider's usage, believed) or
    // "counted" (the gateway's own count: no usage came, or it could not be true). NULL for
    // generations recorded before this column existed.
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('generations').addColumn('usage_source', 'text').execute();
    },
  },
  '0003_account_seq': {
    // The account's commit sequence number: every transaction that changes its money (a group commit
    // that charges it, a credit entry) moves it by one, so that a view of the account stamped with it
    // is known to be newer or older than another (the limits store keeps the newest).
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('accounts')
        .addColumn('seq', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  '0004_key_lifecycle': {
    // Keys through their life (CONTRACT §9). A key's public hash (its id in answers, generations and
    // key usage) and the hashes of the secrets that authenticate as it come apart, so that a rotation
    // gives the key a new secret and keeps its id: key_secrets maps each secret's hash to its key, and
    // a rotated-out secret authenticates until valid_until. Existing keys keep working: their one
    // secret is the one their public hash was made from. Deleting a key marks it (deleted_at) instead
    // of removing it, so that its generations and usage can still name it. management marks the
    // management keys; updated_at is when the key was last changed.
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('api_keys')
        .addColumn('management', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('api_keys').addColumn('updated_at', 'bigint').execute();
      await db.schema.alterTable('api_keys').addColumn('deleted_at', 'bigint').execute();
      await db.schema
        .createTable('key_secrets')
        .addColumn('secret_hash', 'text', (c) => c.primaryKey())
        .addColumn('key_hash', 'text', (c) => c.notNull().references('api_keys.hash'))
        .addColumn('valid_until', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('key_secrets_key').on('key_secrets').column('key_hash').execute();
      await sql`INSERT INTO key_secrets (secret_hash, key_hash, valid_until, created_at)
        SELECT hash, hash, NULL, created_at FROM api_keys`.execute(db);
    },
  },
  '0005_spend_rollups': {
    // Spend per hour, account, key, model and provider, added to by every group commit in the same
    // transaction as the charges (Reports read these, never a scan of generations); filled from the
    // generations recorded before it. Generations get an index for an account's newest first.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('spend_hourly')
        .addColumn('bucket', 'bigint', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('requests', 'bigint', (c) => c.notNull())
        .addColumn('cost', 'bigint', (c) => c.notNull())
        .addColumn('byok_usage', 'bigint', (c) => c.notNull())
        .addColumn('prompt_tokens', 'bigint', (c) => c.notNull())
        .addColumn('completion_tokens', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('spend_hourly_pk', ['bucket', 'account_id', 'key_hash', 'model', 'provider'])
        .execute();
      await db.schema.createIndex('spend_hourly_account').on('spend_hourly').columns(['account_id', 'bucket']).execute();
      await db.schema.createIndex('generations_account_created').on('generations').columns(['account_id', 'created_at']).execute();
      await sql`INSERT INTO spend_hourly (bucket, account_id, key_hash, model, provider, requests, cost, byok_usage, prompt_tokens, completion_tokens)
        SELECT (created_at / 3600000) * 3600000, account_id, key_hash, model, provider,
               COUNT(*), SUM(total_cost), SUM(byok_usage), SUM(tokens_prompt), SUM(tokens_completion)
        FROM generations
        GROUP BY (created_at / 3600000) * 3600000, account_id, key_hash, model, provider`.execute(db);
    },
  },
  '0006_alert_crossings': {
    // Alert crossings already sent (src/alerts), so that each is sent once by one of the processes.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('alert_crossings')
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('event', 'text', (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('until_ms', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('alert_crossings_pk', ['subject', 'event', 'period'])
        .execute();
    },
  },
  '0007_generations_one_account_index': {
    // generations_account_created (0005) serves every lookup by account that generations_account
    // (0001) did: every charge wrote both, a B-tree insert and a page a group commit for nothing.
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('generations_account').ifExists().execute();
    },
  },
  '0008_charge_journal': {
    // Charges durable but not yet in the tables above, one row each (charge-journal.ts): on SQLite a
    // group commit appends them here, and they are applied to the tables, and dropped from here, in
    // bulk soon after. Unused on PostgreSQL, where a group commit is one statement.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('charge_journal')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('record', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0009_charge_journal_entries': {
    // One row a group commit instead of one a charge (issue 9: a row a charge cost an insert and a
    // delete of its own, ~6 µs a charge): its charges as a JSON array, under a sequence number that is
    // never reused (AUTOINCREMENT; on PostgreSQL, where the table is unused, a serial), so that a row one
    // process dropped is never another's. Rows a stopped process left move over as one-charge entries.
    async up(db: Kysely<unknown>) {
      // Done already (a stop after it and before the migrator recorded it): nothing to do.
      const table = (await db.introspection.getTables()).find((t) => t.name === 'charge_journal');
      if (!table?.columns.some((c) => c.name === 'record')) return;
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      const move = async (trx: Kysely<unknown>) => {
        await trx.schema
          .createTable('charge_journal_entries')
          .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
          .addColumn('charges', 'text', (c) => c.notNull())
          .execute();
        await sql`INSERT INTO charge_journal_entries (charges) SELECT '[' || record || ']' FROM charge_journal ORDER BY id`.execute(trx);
        await trx.schema.dropTable('charge_journal').execute();
        await trx.schema.alterTable('charge_journal_entries').renameTo('charge_journal').execute();
      };
      // PostgreSQL's migrator runs each migration in a transaction; SQLite's does not (each statement
      // would commit alone): one here, so that a stop midway leaves the old journal whole.
      if (db.isTransaction) await move(db);
      else await db.transaction().execute(move);
    },
  },
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Brings the schema to the latest migration. Processes starting at once on one PostgreSQL database
 * take turns: Kysely's migrator holds an advisory lock while it migrates, and creates its own tables
 * if-not-exists. On PostgreSQL the migrating session has no statement timeout (the ledger's sessions
 * do: see database.ts): a migration, or the wait for another process's, may take longer than one.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return migrateSqlite(db);
  await db.connection().execute(async (session) => {
    await sql`SET statement_timeout = 0`.execute(session);
    try {
      await migrate(session);
    } finally {
      await sql`RESET statement_timeout`.execute(session).catch(() => undefined);
    }
  });
}

/**
 * SQLite: processes starting at once on one file take turns (Kysely takes no lock of its own on
 * SQLite, and two of them ran the same migrations: "table accounts already exists"). The turn is an
 * exclusive lock on a file of its own beside the database, held while the migrations run: the database
 * itself cannot be locked so (a migration takes its own transactions), and the system drops a lock
 * whose process died, so a start killed midway holds no one up. One that finds the lock taken waits
 * for it (up to a minute), then finds the schema up to date.
 */
async function migrateSqlite(db: Kysely<Database>): Promise<void> {
  const handle = sqliteHandleOf(db);
  if (!handle || handle.memory || handle.readonly) return migrate(db);
  const turn = new BetterSqlite3(turnFile(handle.name));
  try {
    turn.pragma('busy_timeout = 0');
    await takeTurn(turn);
    await migrate(db);
  } finally {
    if (turn.inTransaction) turn.exec('ROLLBACK');
    turn.close();
  }
}

/**
 * The lock file's path, the file made as SQLite makes a database's -wal and -shm files: with the
 * database's mode and, when root makes it (a CLI verb run with sudo), the database's owner. One that
 * this user cannot write is refused, naming it: SQLite would open it read-only without a word, and
 * there BEGIN EXCLUSIVE succeeds while excluding no one (two starts at once ran the same migrations).
 */
function turnFile(databasePath: string): string {
  const path = `${databasePath}-migrations.lock`;
  const database = statSync(databasePath);
  let fd: number;
  try {
    fd = openSync(path, 'a', database.mode & 0o777);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw err;
    throw new Error(`the migrations lock ${path} cannot be written by this user (another user made it): remove it, or start as that user`, {
      cause: err,
    });
  }
  try {
    if (process.getuid?.() === 0) fchownSync(fd, database.uid, database.gid);
    fchmodSync(fd, database.mode & 0o777);
  } catch {
    // Not its owner: it was made by a user this one can write for (its mode says so), and stays as it is.
  } finally {
    closeSync(fd);
  }
  return path;
}

/** How long a start waits for another's migrations, and how often it looks. */
const MIGRATION_TURN_WAIT_MS = 60_000;
const MIGRATION_TURN_POLL_MS = 50;

/** The exclusive lock on `turn`, waited for without blocking the event loop (another start in this process may hold it). */
async function takeTurn(turn: BetterSqlite3.Database): Promise<void> {
  const until = Date.now() + MIGRATION_TURN_WAIT_MS;
  for (;;) {
    try {
      turn.exec('BEGIN EXCLUSIVE');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= until) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, MIGRATION_TURN_POLL_MS));
  }
}

async function migrate(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider, migrationTableName: 'tollgate_migrations', migrationLockTableName: 'tollgate_migrations_lock' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`);
  }
}
