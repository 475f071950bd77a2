import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalEntry } from '../src/ledger/charge-journal.js';
import { FileChargeJournal } from '../src/ledger/file-charge-journal.js';
import { journalEntryText } from '../src/ledger/journal-entry-text.js';
import { chargeMaker } from './helpers/charges.js';

const T0 = Date.UTC(2026, 10, 18, 10);
const MINUTE = 60_000;
const charge = chargeMaker('journal', T0);

describe('the charge journal files (issue 9: a group commit is one write)', () => {
  let root: string;
  let dir: string;
  let now: number;
  const clock = () => now;
  const journal = (options: { segmentBytes?: number } = {}) => new FileChargeJournal(dir, { now: clock, ...options });
  const segments = () => readdirSync(dir).sort();
  const lines = (name: string) => readFileSync(join(dir, name), 'utf8').split('\n');

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'tollgate-journal-files-'));
    dir = join(root, 'ledger.db-charges');
    now = T0;
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes nothing until the first charge, then one line an entry; another process reads every entry back exactly, in order', () => {
    const mine = journal();
    expect(mine.leftover()).toEqual({ entries: [], segments: [], problems: [] });
    const a = [charge('acct', 'h', 5n), charge('acct', 'h', 2n ** 63n, T0 + 1, { finishReason: null })];
    const b = [charge('acct', 'h', 7n)];
    mine.append(a);
    mine.append(b);
    const [name] = segments();
    expect(lines(name ?? '')).toEqual([journalEntryText(a), journalEntryText(b), '']);
    // Its own entries are never its leftovers; another's reader gets them all.
    expect(mine.leftover().entries).toEqual([]);
    expect(
      journal()
        .leftover()
        .entries.map((e) => e.charges),
    ).toEqual([a, b]);
  });

  it('a line whose write did not finish is skipped (it was never acknowledged); one that is not an entry is named, its file kept, the rest read', () => {
    const mine = journal();
    const a = [charge('acct', 'h', 5n)];
    mine.append(a);
    const [name] = segments();
    const path = join(dir, name ?? '');
    appendFileSync(path, journalEntryText([charge('acct', 'h', 9n)]).slice(0, 40)); // a write cut short by a kill
    now = T0 + 2 * 60 * MINUTE; // final: the file may be deleted once applied
    const reader = journal();
    const read = reader.leftover();
    expect(read.entries.map((e) => e.charges)).toEqual([a]);
    expect(read.problems).toEqual([]);
    const [entry] = read.entries;
    entry!.segment.open = 1;
    reader.completed(entry!.segment);
    expect(segments()).toEqual([]);

    // A line that is neither an entry nor a set-aside line (never written by the journal): reported, kept.
    const other = journal();
    other.append(a);
    const [second] = segments();
    appendFileSync(join(dir, second ?? ''), 'not json\n');
    other.append(a);
    now += 2 * 60 * MINUTE;
    const again = journal().leftover();
    expect(again.entries.map((e) => e.charges)).toEqual([a, a]);
    expect(again.problems).toEqual([expect.stringContaining(`line 2 of ${join(dir, second ?? '')} is not an entry`)]);
    const segment = again.entries[0]!.segment;
    expect(segment.deletable).toBe(false);
    segment.open = 0;
    journal().release(segment);
    expect(segments()).toEqual([second]);
  });

  it('starts a new segment after a minute or when one is full, and deletes an old one once nothing of it is outstanding', () => {
    const mine = journal({ segmentBytes: 1000 });
    const first = mine.append([charge('acct', 'h', 1n)]);
    now += MINUTE; // a minute on: the next append goes to a new segment
    const second = mine.append([charge('acct', 'h', 2n)]);
    expect(second).not.toBe(first);
    expect(segments()).toHaveLength(2);
    mine.completed(first); // the old one's only entry is in the tables: it goes
    expect(segments()).toEqual([second.path.slice(dir.length + 1)]);
    mine.completed(second); // the current one stays while it is written
    expect(segments()).toHaveLength(1);
    // Full: past segmentBytes the next entry goes to a new one.
    const big = Array.from({ length: 20 }, (_, i) => charge('acct', 'h', BigInt(i)));
    const third = mine.append(big);
    expect(third).toBe(second);
    const fourth = mine.append(big);
    expect(fourth).not.toBe(second);
    expect(segments()).toHaveLength(2);
    mine.completed(third);
    expect(segments()).toEqual([fourth.path.slice(dir.length + 1)]);
    // Closing: the last one goes when nothing of it is outstanding, and stays when something is.
    mine.close();
    expect(segments()).toHaveLength(1);
    mine.completed(fourth);
    expect(segments()).toEqual([]);
  });

  it("another process's segment younger than eleven minutes is read but never deleted (its writer may still write it); an older one is", () => {
    const writer = journal();
    const segment = writer.append([charge('acct', 'h', 1n)]);
    now += 10 * MINUTE;
    const young = journal().leftover().entries[0]!.segment;
    expect(young.deletable).toBe(false);
    journal().release(young);
    expect(segments()).toEqual([segment.path.slice(dir.length + 1)]);
    now += 2 * MINUTE;
    const old = journal().leftover().entries[0]!.segment;
    expect(old.deletable).toBe(true);
    journal().release(old);
    expect(segments()).toEqual([]);
    // Gone meanwhile (another start applied and deleted it): nothing to do.
    expect(() => journal().release(old)).not.toThrow();
  });

  it('charges set aside are left out of what another process reads, whichever segment says so', () => {
    const mine = journal();
    const poison = charge('acct', 'h', 1n);
    const good = charge('acct', 'h', 2n);
    mine.append([poison, good]);
    now += MINUTE;
    mine.setAside([poison.id]); // in the next segment
    expect(segments()).toHaveLength(2);
    expect(
      journal()
        .leftover()
        .entries.map((e) => e.charges),
    ).toEqual([[good]]);
  });

  it('a file of another name in the directory is neither read nor deleted', () => {
    const mine = journal();
    mine.append([charge('acct', 'h', 1n)]);
    writeFileSync(join(dir, 'notes.txt'), 'keep');
    now += 2 * 60 * MINUTE;
    const reader = journal();
    for (const { segment } of reader.leftover().entries) reader.release(segment);
    expect(segments()).toEqual(['notes.txt']);
  });

  it('a segment is named by when it was started and a random part', () => {
    const mine = journal();
    const segment = mine.append([charge('acct', 'h', 1n)]);
    expect(segment.path.startsWith(join(dir, `${T0}-`))).toBe(true);
    expect(segment.path).toMatch(/-[0-9a-f]{12}\.jsonl$/);
  });

  it("a process's own segments go oldest first, so that a set-aside line outlives the entry it names", () => {
    const mine = journal();
    const poison = charge('acct', 'h', 1n);
    const a = mine.append([poison, charge('acct', 'h', 2n)]);
    now += MINUTE;
    const b = mine.append([charge('acct', 'h', 3n)]);
    mine.setAside([poison.id]); // in b
    now += MINUTE;
    const c = mine.append([charge('acct', 'h', 4n)]);
    expect(segments()).toHaveLength(3);
    mine.completed(b); // b is done, but a (older) is not: b stays, with its set-aside line
    expect(segments()).toHaveLength(3);
    mine.completed(a); // now both go, a first
    expect(segments()).toEqual([c.path.slice(dir.length + 1)]);
  });

  it("a file it cannot read is named and kept, and the others' entries are read", () => {
    const first = journal();
    const a = [charge('acct', 'h', 1n)];
    first.append(a);
    mkdirSync(join(dir, `${T0 - 1}-${'0'.repeat(12)}.jsonl`)); // a directory named as a segment
    now += 2 * 60 * MINUTE;
    const read = journal().leftover();
    expect(read.entries.map((e) => e.charges)).toEqual([a]);
    expect(read.problems).toEqual([expect.stringContaining('could not be read')]);
  });

  it('a segment read while it may still be written is read again, as the same segment, once it is final; then it may go', () => {
    const writer = journal();
    const a = [charge('acct', 'h', 1n)];
    writer.append(a);
    const reader = journal();
    const first = reader.leftover();
    expect(first.segments[0]?.deletable).toBe(false);
    expect(first.finalAt).toBe(T0 + 11 * MINUTE);
    const b = [charge('acct', 'h', 2n)];
    writer.append(b); // the writer goes on meanwhile
    now = T0 + 11 * MINUTE;
    const again = reader.leftover(new Set(first.segments.map((g) => g.path)));
    expect(again.segments[0]).toBe(first.segments[0]); // one object a file: its open entries are counted once
    expect(again.segments[0]?.deletable).toBe(true);
    expect(again.finalAt).toBeUndefined();
    expect(again.entries.map((e) => e.charges)).toEqual([a, b]);
  });
});

describe('a journal writer that cannot open its next file', () => {
  it('keeps writing to the current one for five minutes past its minute, then fails the append', () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-journal-noopen-'));
    const dir = join(root, 'ledger.db-charges');
    let now = T0;
    const writer = new FileChargeJournal(dir, { now: () => now });
    try {
      const first = writer.append([charge('acct', 'h', 1n)]);
      // No new file can be made any more (a file stands where the directory was; the one open still takes writes).
      rmSync(dir, { recursive: true });
      writeFileSync(dir, '');
      now = T0 + 2 * MINUTE; // past the minute: a new file is due, and cannot be opened
      expect(writer.append([charge('acct', 'h', 2n)])).toBe(first);
      now = T0 + MINUTE + 5 * MINUTE; // past the grace: the append fails (its charges stay queued)
      expect(() => writer.append([charge('acct', 'h', 3n)])).toThrow();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a journal writer frozen between its file-age check and its write', () => {
  it('writes the entry again to a new file when another process deleted its file meanwhile, and only then', () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-journal-frozen-'));
    const dir = join(root, 'ledger.db-charges');
    // Each append reads the clock twice: to check its file's age, and after the write.
    const clock: Array<() => number> = [];
    const writer = new FileChargeJournal(dir, { now: () => (clock.shift() as () => number)() });
    try {
      clock.push(
        () => T0,
        () => T0,
      );
      const first = writer.append([charge('acct', 'h', 1n)]);
      // Frozen for twelve minutes after a check that found the file young; nothing deleted it: it stays.
      const kept = [charge('acct', 'h', 2n)];
      clock.push(
        () => T0 + 1000,
        () => T0 + 12 * MINUTE,
      );
      expect(writer.append(kept)).toBe(first);
      // Frozen again, and this time a start elsewhere took the file for final and deleted it meanwhile.
      const entry = [charge('acct', 'h', 3n)];
      clock.push(
        () => (rmSync(first.path), T0 + 2000),
        () => T0 + 12 * MINUTE,
      );
      const segment = writer.append(entry);
      expect(segment).not.toBe(first);
      expect(readFileSync(segment.path, 'utf8')).toBe(journalEntryText(entry) + '\n');
      expect(readdirSync(dir)).toEqual([segment.path.slice(dir.length + 1)]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a journal entry', () => {
  it('reports itself complete once, however often its charges are written again', () => {
    const cs = [charge('acct', 'h', 1n), charge('acct', 'h', 2n)];
    const entry = new JournalEntry(cs, undefined);
    expect(entry.completedBy([cs[0]!])).toBe(false);
    expect(entry.completedBy(cs)).toBe(true);
    expect(entry.done([cs[0]!])).toBe(false);
    expect(entry.done([cs[1]!])).toBe(true);
    // A batch written again after its commit landed (a failure after it): nothing completes twice.
    expect(entry.completedBy(cs)).toBe(false);
    expect(entry.done(cs)).toBe(false);
    expect(entry.remaining()).toEqual([]);
  });
});
