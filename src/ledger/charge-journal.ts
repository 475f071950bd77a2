import type { Kysely } from 'kysely';
import type { Charge } from './ledger.js';
import type { Database } from './schema.js';

/**
 * Where a group commit makes its charges durable when writing them to the ledger's tables costs far
 * more than appending them somewhere (SQLite: a commit of one charge to the tables writes ~7 pages to
 * the WAL and costs ~60 µs in process, an append to the journal one page and ~18 µs). The charges are
 * then applied to the tables in bulk soon after, by the dialect's CommitWriter, which drops them from
 * the journal in the same transaction; a charge applied twice is recorded once (its generation id),
 * so a crash between the two, or two processes applying the same leftovers, never charges twice.
 */
export interface ChargeJournal {
  /** Makes `charges` durable, in one transaction; throws when it could not (they stay queued). */
  append(db: Kysely<Database>, charges: readonly Charge[]): Promise<void>;
  /** Drops charges from the journal that will never be applied (set aside: logged for replay instead). */
  discard(db: Kysely<Database>, ids: readonly string[]): Promise<void>;
  /** Every charge in the journal, oldest id first: what a process journaled and did not apply (it stopped). */
  leftover(db: Kysely<Database>): Promise<Charge[]>;
}
