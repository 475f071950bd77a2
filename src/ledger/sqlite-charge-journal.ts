import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { ChargeJournal } from './charge-journal.js';
import { journalEntryCharges, journalEntryText } from './journal-entry-text.js';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';
import { writeOnHandle } from './sqlite-writes.js';

const appends = new WeakMap<BetterSqlite3.Database, (charges: readonly Charge[]) => number>();

/** One prepared insert of one row, in a transaction of its own; answers the row's sequence number. */
function appendOn(sqlite: BetterSqlite3.Database): (charges: readonly Charge[]) => number {
  let append = appends.get(sqlite);
  if (!append) {
    const insert = sqlite.prepare('INSERT INTO charge_journal (charges) VALUES (?)');
    const transaction = sqlite.transaction((charges: readonly Charge[]) => Number(insert.run(journalEntryText(charges)).lastInsertRowid));
    // BEGIN IMMEDIATE: the write lock is taken at the start (another process writing waits, up to busy_timeout).
    append = (charges) => transaction.immediate(charges);
    appends.set(sqlite, append);
  }
  return append;
}

/** An entry's charges read back; throws naming the entry when its row is not a list of charges. */
function chargesOf(seq: unknown, text: string): Charge[] {
  try {
    return journalEntryCharges(text);
  } catch (err) {
    throw new Error(`charge journal: entry ${String(seq)} is not a list of charges (${(err as Error).message}); nothing was applied`, { cause: err });
  }
}

/** The charge journal on SQLite: the `charge_journal` table of the ledger's own database (charge-journal.ts). */
export const sqliteChargeJournal: ChargeJournal = {
  append(db: Kysely<Database>, charges: readonly Charge[]): Promise<number> {
    return writeOnHandle(db, (sqlite) => appendOn(sqlite)(charges));
  },

  async discard(db: Kysely<Database>, seq: number, keep: readonly Charge[]): Promise<void> {
    if (keep.length === 0) await db.deleteFrom('charge_journal').where('seq', '=', seq).execute();
    else
      await db
        .updateTable('charge_journal')
        .set({ charges: journalEntryText(keep) })
        .where('seq', '=', seq)
        .execute();
  },

  async leftover(db: Kysely<Database>): Promise<Array<{ seq: number; charges: Charge[] }>> {
    const rows = await db.selectFrom('charge_journal').select(['seq', 'charges']).orderBy('seq').execute();
    return rows.map((r) => ({ seq: Number(r.seq), charges: chargesOf(r.seq, r.charges) }));
  },
};
