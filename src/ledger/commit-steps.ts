import type { Kysely } from 'kysely';
import type { AccountSnapshot, Charge } from './ledger.js';
import type { Nano } from './money.js';
import type { Database } from './schema.js';

/** What one group commit adds to an account: the cost of its charges recorded now. */
export interface AccountDelta {
  accountId: string;
  cost: Nano;
}

/** What one group commit adds to a key's usage in one period. */
export interface UsageDelta {
  keyHash: string;
  period: string;
  usage: Nano;
  byokUsage: Nano;
}

/** A key's usage row as a statement left it (integers as the driver answers them). */
export interface KeyUsageRow {
  key_hash: string;
  period: string;
  usage: unknown;
  byok_usage: unknown;
}

/**
 * The statements of a group commit in one SQL dialect, each run on the commit's transaction (`trx`)
 * with SQL written once. write-commit.ts decides what runs and in which order; these only say how.
 */
export interface CommitSteps {
  /** Records the generations not recorded yet and skips the others; answers the ids it recorded. */
  insertGenerations(trx: Kysely<Database>, charges: readonly Charge[]): Promise<Set<string>>;
  /**
   * Moves each account (given in id order, and locked in that order) by its cost: balance down, total
   * usage up, commit sequence number by one. Answers the accounts as the statement left them.
   */
  chargeAccounts(trx: Kysely<Database>, deltas: readonly AccountDelta[]): Promise<Map<string, AccountSnapshot>>;
  /** Adds to each key's usage per period (given in key, then period order); answers the rows as left. */
  addKeyUsage(trx: Kysely<Database>, deltas: readonly UsageDelta[]): Promise<KeyUsageRow[]>;
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

const flag = (b: boolean): number => (b ? 1 : 0);

/** A charge's generation row, as values in GENERATION_COLUMNS order (money as bigint, never a float). */
export function generationValues(c: Charge): unknown[] {
  return [
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
    c.finishReason,
    c.usageSource,
    c.createdAt,
    c.latencyMs,
  ];
}
