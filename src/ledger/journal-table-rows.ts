import type { Kysely } from 'kysely';
import { journalEntryCharges, journalEntryText } from './journal-entry-text.js';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';

/**
 * The `charge_journal` table, where versions before the journal files (file-charge-journal.ts) made
 * a group commit's charges durable, one row an entry. Nothing is appended to it any more; a start
 * applies what an earlier version left in it (each once: generation ids), and the commit that applies
 * a row's last charge drops the row in the same transaction (CommitWriter's `journaled`).
 */
export const journalTableRows = {
  /** Row `seq` now holds only `keep` (the rest was set aside, logged for replay instead); with none to keep, it goes. */
  async discard(db: Kysely<Database>, seq: number, keep: readonly Charge[]): Promise<void> {
    if (keep.length === 0) await db.deleteFrom('charge_journal').where('seq', '=', seq).execute();
    else
      await db
        .updateTable('charge_journal')
        .set({ charges: journalEntryText(keep) })
        .where('seq', '=', seq)
        .execute();
  },

  /** Every row, oldest first. */
  async leftover(db: Kysely<Database>): Promise<Array<{ seq: number; charges: Charge[] }>> {
    const rows = await db.selectFrom('charge_journal').select(['seq', 'charges']).orderBy('seq').execute();
    return rows.map((r) => ({ seq: Number(r.seq), charges: chargesOf(r.seq, r.charges) }));
  },
};

/** A row's charges read back; throws naming the row when it is not a list of charges. */
function chargesOf(seq: unknown, text: string): Charge[] {
  try {
    return journalEntryCharges(text);
  } catch (err) {
    throw new Error(`charge journal: entry ${String(seq)} is not a list of charges (${(err as Error).message}); nothing was applied`, { cause: err });
  }
}
