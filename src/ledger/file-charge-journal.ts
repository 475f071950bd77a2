import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { JournalSegment, type ChargeJournal, type LeftoverEntry, type Leftovers } from './charge-journal.js';
import { journalEntryCharges, journalEntryText } from './journal-entry-text.js';
import type { Charge } from './ledger.js';

/** A segment is left for the next once it holds this much… */
const SEGMENT_BYTES = 4 * 1024 * 1024;
/** …or was started this long ago (checked at each append, so no timer). */
const SEGMENT_MS = 60_000;
/**
 * A segment started longer ago than its writer's SEGMENT_MS and this margin is written by no process
 * any more (its writer moved on, or stopped): a process that applies another's segments deletes only
 * such ones. A younger one may be a running process's: its charges are applied (each once: generation
 * ids) and the file is left to its writer, or read again once it is final (recoverJournal).
 */
const FINAL_MARGIN_MS = 10 * 60_000;
/** How long past SEGMENT_MS a segment still takes entries when no new one can be opened (half the margin). */
const ROTATE_GRACE_MS = FINAL_MARGIN_MS / 2;

const SEGMENT_NAME = /^(\d{13,16})-[0-9a-f]{12}\.jsonl$/;

export interface FileChargeJournalOptions {
  /** Wall-clock milliseconds (segment names hold when they were started; every process on the machine reads the same clock). */
  now?: () => number;
  segmentBytes?: number;
  segmentMs?: number;
}

/** Where the journal of the SQLite database at `path` keeps its files. */
export function journalDirOf(path: string): string {
  return `${path}-charges`;
}

/**
 * A PostgreSQL ledger's fallback journal (`ledger.journal_dir`): a subdirectory of `base` for its
 * database (host, port and name; never the credentials), so that gateways of two databases started
 * from one directory never apply each other's charges.
 */
export function postgresJournalDirOf(base: string, databaseUrl: string): string {
  let name = databaseUrl;
  try {
    const url = new URL(databaseUrl);
    name = `${url.hostname}:${url.port || '5432'}/${decodeURIComponent(url.pathname.slice(1))}`;
  } catch {
    // Not a URL: the whole text names it (it is only hashed).
  }
  return join(resolve(base), `pg-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`);
}

/** A set-aside line: generation ids whose charges are never to be applied from the journal. */
function setAsideLine(ids: readonly string[]): string {
  return `${JSON.stringify({ x: ids })}\n`;
}

function setAsideIds(line: string): string[] | undefined {
  if (!line.startsWith('{"x":')) return undefined;
  const value = JSON.parse(line) as { x?: unknown };
  return Array.isArray(value.x) && value.x.every((id) => typeof id === 'string') ? (value.x as string[]) : undefined;
}

/**
 * The charge journal of a SQLite ledger: append-only files in a directory beside the database
 * (`<database>-charges/`), one entry a line (journal-entry-text.ts), each append one `write` (the
 * kernel has it: a process killed after it loses nothing, as a SQLite commit with `synchronous =
 * NORMAL`; neither is flushed to the disk before the WAL's next checkpoint). A SQLite transaction to
 * append the same line cost three to four times as much CPU (its locks, two writes a WAL page, the
 * checkpoint copying the page and its deletion again): bench/README.md, nineteenth session.
 *
 * Each process writes segments of its own (named by when they were started and a random part), a new
 * one every SEGMENT_BYTES or SEGMENT_MS, and deletes a segment once it writes another and every entry
 * of it is in the tables or set aside. A write that fails part-way is cut off again (or the segment
 * left for a new one), so that only a segment's last line can ever be partial, and a partial last line
 * was never acknowledged: it is skipped.
 */
export class FileChargeJournal implements ChargeJournal {
  private current: JournalSegment | undefined;
  private fd = -1;
  private size = 0;
  /**
   * This process's segments not deleted yet, oldest first (never another process's leftovers). They
   * go in this order, so that a set-aside line, always in the segment of its entry or a later one,
   * outlives the entry it names.
   */
  private readonly mine: JournalSegment[] = [];
  private readonly minePaths = new Set<string>();
  /** Other processes' segments read, by path: one object a file, however often it is read. */
  private readonly others = new Map<string, JournalSegment>();
  private readonly now: () => number;
  private readonly segmentBytes: number;
  private readonly segmentMs: number;

  constructor(
    readonly dir: string,
    options: FileChargeJournalOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.segmentBytes = options.segmentBytes ?? SEGMENT_BYTES;
    this.segmentMs = options.segmentMs ?? SEGMENT_MS;
  }

  append(charges: readonly Charge[]): JournalSegment {
    const line = journalEntryText(charges) + '\n';
    const checkedAt = this.now();
    let segment = this.writable(checkedAt);
    this.write(segment, line);
    // Frozen between the age check and the write (or the clock jumped): another process may have
    // taken the file for final and deleted it. Then the line is written again, to a new one.
    const writtenAt = this.now();
    if ((writtenAt - checkedAt > this.segmentMs || writtenAt < checkedAt) && fstatSync(this.fd).nlink === 0) {
      this.leave(segment);
      segment = this.writable(writtenAt);
      this.write(segment, line);
    }
    segment.open += 1;
    return segment;
  }

  setAside(ids: readonly string[]): void {
    if (ids.length > 0) this.write(this.writable(this.now()), setAsideLine(ids));
  }

  completed(segment: JournalSegment): void {
    segment.open -= 1;
    this.release(segment);
  }

  release(segment: JournalSegment): void {
    if (this.minePaths.has(segment.path)) {
      // Mine: the oldest ones whose entries are all done go, in order (not the one being written).
      for (let oldest = this.mine[0]; oldest && oldest.open === 0 && oldest !== this.current; oldest = this.mine[0]) {
        unlink(oldest.path);
        this.mine.shift();
        this.minePaths.delete(oldest.path);
      }
      return;
    }
    if (segment.open > 0 || !segment.deletable) return;
    unlink(segment.path);
    this.others.delete(segment.path);
  }

  /**
   * The current segment, or a new one when it is full, old or broken. When a new one cannot be opened
   * (no file descriptor left, say), the current one takes the entry for up to ROTATE_GRACE_MS after it
   * should have been left: well within the margin before other processes may delete it.
   */
  private writable(now: number): JournalSegment {
    const current = this.current;
    const age = current ? now - current.startedAt : 0;
    if (current && this.size < this.segmentBytes && age < this.segmentMs) return current;
    const path = join(this.dir, `${now}-${randomBytes(6).toString('hex')}.jsonl`);
    let fd: number;
    try {
      mkdirSync(this.dir, { recursive: true });
      fd = openSync(path, 'ax');
    } catch (err) {
      if (current && age >= 0 && age < this.segmentMs + ROTATE_GRACE_MS) return current;
      throw err;
    }
    if (current) this.leave(current);
    this.fd = fd;
    this.size = 0;
    this.current = new JournalSegment(path, now, true);
    this.mine.push(this.current);
    this.minePaths.add(path);
    return this.current;
  }

  private leave(segment: JournalSegment): void {
    this.current = undefined;
    const fd = this.fd;
    this.fd = -1;
    try {
      closeSync(fd);
      this.release(segment);
    } catch {
      // Not deleted: a later start applies it again once it is final (each charge once), and deletes it.
    }
  }

  /** One `write` of a whole line; one cut short is cut off again, so that the next line starts clean. */
  private write(segment: JournalSegment, line: string): void {
    let written: number;
    try {
      written = writeSync(this.fd, line);
    } catch (err) {
      this.cutBack(segment);
      throw err;
    }
    const bytes = Buffer.byteLength(line);
    if (written !== bytes) {
      this.cutBack(segment);
      throw new Error(`charge journal: ${written} of ${bytes} bytes written to ${segment.path}`);
    }
    this.size += bytes;
  }

  private cutBack(segment: JournalSegment): void {
    try {
      ftruncateSync(this.fd, this.size);
    } catch {
      // The partial line stays this segment's last: the next append starts another.
      this.leave(segment);
    }
  }

  /**
   * Other processes' entries, oldest segment first (only those of `paths`, when given), less the
   * charges any of them set aside. A partial last line is skipped (never acknowledged); a line that is
   * not an entry, or a file that cannot be read, is reported in `problems`, its file kept, and the rest
   * read. `finalAt`: when the last of the segments read that may still be written will be final.
   */
  leftover(paths?: ReadonlySet<string>): Leftovers {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], segments: [], problems: [] };
      throw err;
    }
    const problems: string[] = [];
    const setAside = new Set<string>();
    const read: Array<{ segment: JournalSegment; lines: Charge[][] }> = [];
    const now = this.now();
    let finalAt: number | undefined;
    for (const name of names.filter((n) => SEGMENT_NAME.test(n)).sort()) {
      const path = join(this.dir, name);
      if (this.minePaths.has(path) || (paths && !paths.has(path))) continue;
      const startedAt = Number(SEGMENT_NAME.exec(name)?.[1]);
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // another process applied it and deleted it
        problems.push(`charge journal: ${path} could not be read (${(err as Error).message}); it is kept`);
        continue;
      }
      const final = now >= startedAt + this.segmentMs + FINAL_MARGIN_MS;
      if (!final) finalAt = Math.max(finalAt ?? 0, startedAt + this.segmentMs + FINAL_MARGIN_MS);
      let segment = this.others.get(path);
      if (!segment) this.others.set(path, (segment = new JournalSegment(path, startedAt, false)));
      let readable = true;
      const lines: Charge[][] = [];
      const parts = text.split('\n');
      parts.pop(); // what follows the last newline: nothing, or a line whose write did not finish
      parts.forEach((line, i) => {
        try {
          const ids = setAsideIds(line);
          if (ids) ids.forEach((id) => setAside.add(id));
          else lines.push(journalEntryCharges(line));
        } catch (err) {
          readable = false;
          problems.push(`charge journal: line ${i + 1} of ${path} is not an entry (${(err as Error).message}); the file is kept`);
        }
      });
      segment.deletable = final && readable;
      read.push({ segment, lines });
    }
    const entries: LeftoverEntry[] = [];
    for (const { segment, lines } of read) {
      for (const charges of lines) entries.push({ segment, charges: charges.filter((c) => !setAside.has(c.id)) });
    }
    return { entries, segments: read.map((r) => r.segment), problems, finalAt };
  }

  close(): void {
    if (this.current) this.leave(this.current);
  }
}

/** Deletes `path`; one deleted already (another process applied a stopped one's segment too) is no error. */
function unlink(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * The journal of a ledger in memory (`sqlite::memory:`): nothing outlives the process to be durable
 * on, so an append keeps nothing; entries are tracked as a file's are.
 */
export class MemoryChargeJournal implements ChargeJournal {
  private readonly segment = new JournalSegment(':memory:', 0, false);

  append(): JournalSegment {
    this.segment.open += 1;
    return this.segment;
  }

  setAside(): void {}

  completed(segment: JournalSegment): void {
    segment.open -= 1;
  }

  release(): void {}

  leftover(): Leftovers {
    return { entries: [], segments: [], problems: [] };
  }

  close(): void {}
}
