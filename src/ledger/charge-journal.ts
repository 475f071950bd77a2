import type { Charge } from './ledger.js';

/**
 * A file of journal entries (file-charge-journal.ts), this process's or a stopped one's, as the
 * process that applies its entries tracks it: it goes once none of its entries is outstanding and no
 * process may still write it.
 */
export class JournalSegment {
  /** Entries of it whose charges are not all in the tables or set aside yet. */
  open = 0;

  constructor(
    readonly path: string,
    /** When its writer started it (wall clock, from its name). */
    readonly startedAt: number,
    /** Whether it may be deleted once nothing of it is outstanding (false: a running process may still write it, or a line of it could not be read). */
    public deletable: boolean,
  ) {}
}

/**
 * One group commit's charges as journaled, as the process that applies them tracks them: which are
 * neither in the tables nor set aside yet. An entry is either a line of a journal file (`segment`), or
 * a row of the `charge_journal` table that versions before the files wrote (`row`), which the commit
 * that applies its last charge drops, in the same transaction (CommitWriter's `journaled`). A charge is
 * taken off once however often it is written again (a retry of a commit that landed moves nothing).
 */
export class JournalEntry {
  private readonly outstanding: Set<Charge>;
  /** Whether `done` has reported the entry complete (it does so once, however often its charges are written again). */
  private finished = false;

  constructor(
    charges: readonly Charge[],
    readonly segment: JournalSegment | undefined,
    /** The table row's sequence number (earlier versions' entries). */
    readonly row?: number,
  ) {
    this.outstanding = new Set(charges);
  }

  /** Whether the entry would be complete, for the first time, once `charges` are in the tables. */
  completedBy(charges: readonly Charge[]): boolean {
    if (this.finished) return false;
    const written = new Set(charges);
    for (const c of this.outstanding) if (!written.has(c)) return false;
    return true;
  }

  /**
   * `charges` are in the tables, or set aside: no longer outstanding. Answers true when this made the
   * entry complete: once in its life, so that its segment or row is let go once (a batch written again
   * after a failure that followed its commit completes nothing a second time).
   */
  done(charges: readonly Charge[]): boolean {
    for (const c of charges) this.outstanding.delete(c);
    if (this.finished || this.outstanding.size > 0) return false;
    this.finished = true;
    return true;
  }

  /** The charges still outstanding: what the entry must keep. */
  remaining(): Charge[] {
    return [...this.outstanding];
  }
}

/** An entry a stopped process journaled, and the segment it is in. */
export interface LeftoverEntry {
  segment: JournalSegment;
  charges: Charge[];
}

/** What a read of other processes' journal files found. */
export interface Leftovers {
  entries: LeftoverEntry[];
  /** Every segment read (one may hold no entry left to apply: it goes once released). */
  segments: JournalSegment[];
  /** Lines and files that could not be read (their files are kept). */
  problems: string[];
  /** When some segments read may still be written by a running process: when the last of them is final. */
  finalAt?: number;
}

/**
 * Where a group commit makes its charges durable when writing them to the ledger's tables costs far
 * more than appending them somewhere (SQLite: a commit of one charge to the tables writes ~7 pages to
 * the WAL). The charges are applied to the tables in bulk soon after; a charge applied twice is
 * recorded once (its generation id), so a stop between the two, or two processes applying the same
 * leftovers, never charges twice.
 */
export interface ChargeJournal {
  /** Makes `charges` durable as one entry and answers the segment it is in; throws when it could not (they stay queued). */
  append(charges: readonly Charge[]): JournalSegment;
  /** Charges set aside (logged for replay instead): never applied from the journal by a later start. Throws when it could not say so. */
  setAside(ids: readonly string[]): void;
  /** An entry of `segment` has nothing outstanding any more. */
  completed(segment: JournalSegment): void;
  /** Deletes `segment` if nothing of it is outstanding and no process may still write it. */
  release(segment: JournalSegment): void;
  /**
   * What other processes journaled and did not apply (they stopped, or are applying it still), oldest
   * first (only the segments of `paths`, when given); lines and files that could not be read, named;
   * and, when some of the segments may still be written by a running process, when the last of them
   * is final (read them again then to apply and delete them).
   */
  leftover(paths?: ReadonlySet<string>): Leftovers;
  /** Stops writing (this process's last segment goes if nothing of it is outstanding). */
  close(): void;
}
