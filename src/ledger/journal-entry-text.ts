import { fromChargeRecord, toChargeRecord, type ChargeRecord } from './charge-record.js';
import type { Charge } from './ledger.js';

/**
 * A charge journal entry's text (charge-journal.ts): one group commit's charges, written in the commit's
 * path (each answer waits for it) and read back only by a start that finds the entry left over.
 *
 * Written compactly, as JSON, version 2:
 *
 *     {"v":2,"t":T0,"s":[STRINGS],"c":[[id,account,key,model,provider,tokensPrompt,tokensCompletion,
 *       totalCost,byokUsage,flags,finishReason,usageSource,createdAt-T0,latencyMs],…]}
 *
 * The names a commit's charges share (account, key hash, model, provider, finish reason, usage source)
 * are written once, in `s`, and each charge names them by index (-1: null); money is a JSON number when
 * it is a safe integer and a decimal string past that (exact either way); flags are isByok 1,
 * streamed 2, cancelled 4; times are milliseconds from the first charge's. As objects with a name a
 * field and a 13-digit time (version 1, `[ChargeRecord, …]`), 16 charges of one key took 6,385 bytes
 * and ~14,800 instructions a charge to write; so, 1,298 bytes and ~9,000, and the commit that appends the
 * entry writes one WAL page instead of two or three (eighteenth session, bench/README.md). A commit
 * whose times lie further apart than a safe integer is written as version 1, which is still read:
 * entries left by an earlier version are applied as they were written.
 */
export function journalEntryText(charges: readonly Charge[]): string {
  const first = charges[0];
  if (first === undefined) return '[]';
  const t0 = first.createdAt;
  const strings: string[] = [];
  const index = new Map<string, number>();
  const ref = (s: string | null): number => {
    if (s === null) return -1;
    let i = index.get(s);
    if (i === undefined) {
      i = strings.length;
      strings.push(s);
      index.set(s, i);
    }
    return i;
  };
  const rows: unknown[][] = [];
  for (const c of charges) {
    const dt = c.createdAt - t0;
    if (!Number.isSafeInteger(dt)) return JSON.stringify(charges.map(toChargeRecord));
    rows.push([
      c.id,
      ref(c.accountId),
      ref(c.keyHash),
      ref(c.model),
      ref(c.provider),
      c.tokensPrompt,
      c.tokensCompletion,
      money(c.totalCost),
      money(c.byokUsage),
      (c.isByok ? 1 : 0) | (c.streamed ? 2 : 0) | (c.cancelled ? 4 : 0),
      ref(c.finishReason),
      ref(c.usageSource),
      dt,
      c.latencyMs,
    ]);
  }
  return JSON.stringify({ v: 2, t: t0, s: strings, c: rows });
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An amount of nanocredits as JSON writes it exactly: a number within ±(2^53 − 1), else its decimal text. */
const money = (n: bigint): number | string => (n <= SAFE && n >= -SAFE ? Number(n) : n.toString());

/** The charges of an entry's text, either version; throws naming what is wrong when it is not an entry. */
export function journalEntryCharges(text: string): Charge[] {
  const entry: unknown = JSON.parse(text);
  if (Array.isArray(entry)) return entry.map(fromChargeRecord);
  if (!isObject(entry) || entry.v !== 2) throw new Error('not a list of charges, nor a version 2 entry');
  const { t, s, c } = entry;
  if (typeof t !== 'number' || !Array.isArray(s) || !Array.isArray(c)) throw new Error('a version 2 entry needs "t", "s" and "c"');
  const name = (i: unknown, nullable: boolean): unknown => {
    if (nullable && i === -1) return null;
    if (typeof i !== 'number' || !Number.isInteger(i) || i < 0 || i >= s.length) throw new Error(`no string ${String(i)} in the entry`);
    return s[i];
  };
  return c.map((row: unknown, n: number) => {
    if (!Array.isArray(row) || row.length !== 14) throw new Error(`charge ${n} is not a row of 14 values`);
    const [id, account, key, model, provider, tokensPrompt, tokensCompletion, totalCost, byokUsage, flags, finishReason, usageSource, dt, latencyMs] =
      row as unknown[];
    if (typeof flags !== 'number' || !Number.isInteger(flags) || flags < 0 || flags > 7) throw new Error(`charge ${n} has no flags`);
    if (typeof dt !== 'number') throw new Error(`charge ${n} has no time`);
    // Through the record's own validation, as a version 1 entry's charges are read.
    const record: Record<keyof ChargeRecord, unknown> = {
      id,
      accountId: name(account, false),
      keyHash: name(key, false),
      model: name(model, false),
      provider: name(provider, false),
      tokensPrompt,
      tokensCompletion,
      totalCost: typeof totalCost === 'number' && Number.isSafeInteger(totalCost) ? String(totalCost) : totalCost,
      byokUsage: typeof byokUsage === 'number' && Number.isSafeInteger(byokUsage) ? String(byokUsage) : byokUsage,
      isByok: (flags & 1) !== 0,
      streamed: (flags & 2) !== 0,
      cancelled: (flags & 4) !== 0,
      finishReason: name(finishReason, true),
      usageSource: name(usageSource, true),
      createdAt: t + dt,
      latencyMs,
    };
    return fromChargeRecord(record);
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
