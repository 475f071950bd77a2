import type { Kysely } from 'kysely';
import type { AccountSnapshot, Charge } from './ledger.js';
import type { Database } from './schema.js';
import { flag } from './rows.js';

/** Text in the order rows are locked in (code units, as the ids and names compare in JavaScript). */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A key's usage row as a statement left it (integers as the driver answers them). */
export interface KeyUsageRow {
  key_hash: string;
  period: string;
  usage: unknown;
  byok_usage: unknown;
}

/** What one group commit wrote. */
export interface WrittenCommit {
  /** The generations it recorded (one already recorded is skipped: its charge is never applied twice). */
  recorded: ReadonlySet<string>;
  /** The accounts it charged, as it left them. */
  accounts: Map<string, AccountSnapshot>;
  /** The key usage rows it wrote, as it left them. */
  keyRows: KeyUsageRow[];
}

/**
 * How one SQL dialect writes a group commit, atomically, with SQL written once (no query building per
 * commit). Every writer does the same, in the same order: it records the generations not recorded yet,
 * then moves the accounts of the ones it recorded (balance down, total usage up, commit sequence number
 * by one), locking them in id order, then adds to their keys' usage per period (all-time, UTC day,
 * week, month) in key and period order, then to the hourly spend rollups (spend-rollups.ts) in their
 * key order, so that processes sharing a database never deadlock. A dialect with a charge journal
 * (charge-journal.ts) also drops, in the same transaction, the journal entries `journaled` whose
 * charges are all in the tables with this commit. It throws when the commit did not happen, or when
 * it cannot tell (a lost answer): the charges are then written again, and the ones already recorded
 * are skipped.
 */
export interface CommitWriter {
  /** Writes `charges` (in id order) as one commit, dropping journal entries `journaled` (by sequence number). */
  write(db: Kysely<Database>, charges: readonly Charge[], journaled: readonly number[]): Promise<WrittenCommit>;
}

/** The generations table's columns, in the order `generationValues` gives them. */
export const GENERATION_COLUMNS = [
  'id',
  'account_id',
  'key_hash',
  'model',
  'provider',
  'tokens_prompt',
  'tokens_completion',
  'total_cost',
  'byok_usage',
  'is_byok',
  'streamed',
  'cancelled',
  'finish_reason',
  'usage_source',
  'created_at',
  'latency_ms',
] as const;

/**
 * What PostgreSQL's text cannot hold (NUL) and what its JSON refuses (a lone surrogate), as U+FFFD, on
 * every database alike: a finish reason is whatever the upstream sent, and one odd character in it
 * must not keep a charge out of the ledger.
 */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * What a finish reason is stored as. The scan comes first: a regular expression's replace costs ~300
 * instructions a call even when it finds nothing, and the group commit stores one a charge.
 */
function storable(text: string | null): string | null {
  if (text === null) return null;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) return text.replace(UNSTORABLE, '\ufffd');
  }
  return text;
}

/**
 * Calls `f` with a charge's generation row as its arguments, in GENERATION_COLUMNS order (money as
 * bigint, never a float). As arguments rather than an array: better-sqlite3 binds an array's elements
 * through V8's C++ API, ~420 instructions each, ~6,800 a row (instructions.mjs, eighteenth session).
 */
export function withGenerationValues<T>(c: Charge, f: (...values: unknown[]) => T): T {
  return f(
    c.id,
    c.accountId,
    c.keyHash,
    c.model,
    c.provider,
    c.tokensPrompt,
    c.tokensCompletion,
    c.totalCost,
    c.byokUsage,
    flag(c.isByok),
    flag(c.streamed),
    flag(c.cancelled),
    storable(c.finishReason),
    c.usageSource,
    c.createdAt,
    c.latencyMs,
  );
}

const asArray = (...values: unknown[]): unknown[] => values;

/** A charge's generation row, as values in GENERATION_COLUMNS order. */
export const generationValues = (c: Charge): unknown[] => withGenerationValues(c, asArray);
