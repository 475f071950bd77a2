import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { fromChargeRecord, toChargeRecord } from './charge-record.js';
import type { ChargeJournal } from './charge-journal.js';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';
import { writeOnHandle } from './sqlite-writes.js';

const appends = new WeakMap<BetterSqlite3.Database, (charges: readonly Charge[]) => void>();

/** One transaction of one prepared insert a charge (INSERT OR IGNORE: a charge journaled twice is there once). */
function appendOn(sqlite: BetterSqlite3.Database): (charges: readonly Charge[]) => void {
  let append = appends.get(sqlite);
  if (!append) {
    const insert = sqlite.prepare('INSERT OR IGNORE INTO charge_journal (id, record) VALUES (?, ?)');
    const transaction = sqlite.transaction((charges: readonly Charge[]) => {
      for (const c of charges) insert.run(c.id, JSON.stringify(toChargeRecord(c)));
    });
    // BEGIN IMMEDIATE: the write lock is taken at the start (another process writing waits, up to busy_timeout).
    append = (charges) => transaction.immediate(charges);
    appends.set(sqlite, append);
  }
  return append;
}

/** The charge journal on SQLite: the `charge_journal` table of the ledger's own database (charge-journal.ts). */
export const sqliteChargeJournal: ChargeJournal = {
  async append(db: Kysely<Database>, charges: readonly Charge[]): Promise<void> {
    await writeOnHandle(db, (sqlite) => appendOn(sqlite)(charges));
  },

  async discard(db: Kysely<Database>, ids: readonly string[]): Promise<void> {
    if (ids.length > 0)
      await db
        .deleteFrom('charge_journal')
        .where('id', 'in', [...ids])
        .execute();
  },

  async leftover(db: Kysely<Database>): Promise<Charge[]> {
    const rows = await db.selectFrom('charge_journal').select(['id', 'record']).orderBy('id').execute();
    return rows.map((r) => {
      try {
        return fromChargeRecord(JSON.parse(r.record));
      } catch (err) {
        throw new Error(`charge journal: the row of ${r.id} is not a charge (${(err as Error).message}); nothing was applied`, { cause: err });
      }
    });
  },
};
