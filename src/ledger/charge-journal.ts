import type { Kysely } from 'kysely';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';

/**
 * One append to the journal (one group commit's charges, one row), as the process that holds it
 * tracks it: which of its charges are neither in the tables nor set aside yet. The commit that applies
 * the last of them drops the row, in the same transaction (CommitWriter's `journaled`). A charge is
 * taken off once however often it is written again (a retry of a commit that landed moves nothing).
 */
export class JournalEntry {
  private readonly outstanding: Set<Charge>;

  constructor(
    /** The row's sequence number (never reused: a row dropped by one process is never another's). */
    readonly seq: number,
    /** The charges of the row this process applies (a start leaves out those it applies from another row). */
    charges: readonly Charge[],
  ) {
    this.outstanding = new Set(charges);
  }

  /** Whether the row would have nothing left once `charges` are in the tables. */
  completedBy(charges: readonly Charge[]): boolean {
    const written = new Set(charges);
    for (const c of this.outstanding) if (!written.has(c)) return false;
    return true;
  }

  /** `charges` are in the tables, or set aside: no longer outstanding. */
  done(charges: readonly Charge[]): void {
    for (const c of charges) this.outstanding.delete(c);
  }

  /** The charges still outstanding: what the row must keep. */
  remaining(): Charge[] {
    return [...this.outstanding];
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
