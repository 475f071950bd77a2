import { randomBytes } from 'node:crypto';
import { Migrator, type Kysely } from 'kysely';
import type { Database } from '../../src/ledger/schema.js';
import pg from 'pg';
import { migrations } from '../../src/ledger/migrations.js';

/**
 * The ledgers a suite runs over: SQLite in memory always; PostgreSQL too when DATABASE_URL points at
 * one (CI always sets it). Each PostgreSQL run gets a database of its own, dropped afterwards.
 */
export interface DatabaseTarget {
  name: 'sqlite' | 'postgres';
  create(): Promise<{ url: string; drop(): Promise<void> }>;
}

export const sqliteTarget: DatabaseTarget = {
  name: 'sqlite',
  create: async () => ({ url: 'sqlite::memory:', drop: async () => undefined }),
};

function postgresTarget(adminUrl: string): DatabaseTarget {
  return {
    name: 'postgres',
    async create() {
      const name = `tollgate_test_${process.pid}_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return {
        url: url.toString(),
        async drop() {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await c.end();
        },
      };
    },
  };
}

export const databaseTargets: DatabaseTarget[] = process.env.DATABASE_URL ? [sqliteTarget, postgresTarget(process.env.DATABASE_URL)] : [sqliteTarget];

if (!process.env.DATABASE_URL) {
  process.stderr.write('note: DATABASE_URL is not set; ledger suites run on SQLite only (set it to a PostgreSQL URL to run them there too)\n');
}

/** Brings `db` to the schema as it was before migration `first` (its name's number, e.g. '0005'): for tests of a migration over older data. */
export async function migrateUpTo(db: Kysely<Database>, first: string): Promise<void> {
  const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < first));
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => before },
    migrationTableName: 'tollgate_migrations',
    migrationLockTableName: 'tollgate_migrations_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
