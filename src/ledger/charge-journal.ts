import type { Kysely } from 'kysely';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';

/**
 * One append to the journal (one group commit's charges, one row), as the process that holds it
 * tracks it: `left` of its charges are neither in the tables nor set aside yet. The commit that applies
 * the last of them drops the row, in the same transaction (CommitWriter's `journaled`).
 */
export class JournalEntry {
  left: number;

  constructor(
    /** The row's sequence number (never reused: a row dropped by one process is never another's). */
    readonly seq: number,
    /** What the row holds: its charges, less those set aside since. */
    public charges: readonly Charge[],
  ) {
    this.left = charges.length;
  }
}

/**
 * Where a group commit makes its charges durable when writing them to the ledger's tables costs far
 * more than appending them somewhere (SQLite: a commit of one charge to the tables writes ~7 pages to
 * the WAL and costs ~60 µs in process, an append to the journal one page and ~18 µs). The charges are
 * then applied to the tables in bulk soon after, by the dialect's CommitWriter, which drops each entry
 * from the journal in the transaction that applies the last of its charges; a charge applied twice is
 * recorded once (its generation id), so a crash between the two, or two processes applying the same
 * leftovers, never charges twice.
 */
export interface ChargeJournal {
  /** Makes `charges` durable as one entry, in one transaction, and answers its sequence number; throws when it could not (they stay queued). */
  append(db: Kysely<Database>, charges: readonly Charge[]): Promise<number>;
  /**
   * Entry `seq` now holds only `keep` (charges of it set aside will never be applied: they are logged
   * for replay instead); with none to keep, the entry goes.
   */
  discard(db: Kysely<Database>, seq: number, keep: readonly Charge[]): Promise<void>;
  /** Every entry in the journal, oldest first: what a process journaled and did not apply (it stopped). */
  leftover(db: Kysely<Database>): Promise<Array<{ seq: number; charges: Charge[] }>>;
}
