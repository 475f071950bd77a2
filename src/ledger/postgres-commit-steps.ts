import type { Kysely } from 'kysely';
import { GENERATION_COLUMNS, generationValues, type AccountDelta, type CommitSteps, type KeyUsageRow, type UsageDelta } from './commit-steps.js';
import type { AccountSnapshot, Charge } from './ledger.js';
import { preparedQuery } from './prepared-query.js';
import type { Database } from './schema.js';

const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(String(v)));

/**
 * Rows in one statement at most: a statement is bounded by the server's statement timeout (see
 * database.ts), and a batch of MAX_BATCH charges is written in a few statements of this size.
 */
const ROWS_PER_STATEMENT = 500;

/** The generations table's column types, in GENERATION_COLUMNS order. */
const GENERATION_TYPES: Record<(typeof GENERATION_COLUMNS)[number], string> = {
  id: 'text',
  account_id: 'text',
  key_hash: 'text',
  model: 'text',
  provider: 'text',
  tokens_prompt: 'integer',
  tokens_completion: 'integer',
  total_cost: 'bigint',
  byok_usage: 'bigint',
  is_byok: 'integer',
  streamed: 'integer',
  cancelled: 'integer',
  finish_reason: 'text',
  usage_source: 'text',
  created_at: 'bigint',
  latency_ms: 'integer',
};

// Each statement takes one array per column (`unnest`): one SQL text whatever the number of rows.
// Money goes as bigint[] (pg sends each bigint as its decimal text): exact, never a float.
const insertGenerations = preparedQuery<{ id: string }>(
  `INSERT INTO generations (${GENERATION_COLUMNS.join(', ')})
   SELECT * FROM unnest(${GENERATION_COLUMNS.map((c, i) => `$${i + 1}::${GENERATION_TYPES[c]}[]`).join(', ')})
   ON CONFLICT (id) DO NOTHING RETURNING id`,
);
// PostgreSQL locks rows as an UPDATE … FROM meets them, in no set order: take them in id order first,
// so that two processes charging the same accounts never deadlock.
const lockAccounts = preparedQuery<{ id: string }>(`SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`);
const chargeAccounts = preparedQuery<{ id: string; seq: unknown; balance: unknown; total_usage: unknown }>(
  `UPDATE accounts SET balance = accounts.balance - v.cost, total_usage = accounts.total_usage + v.cost, seq = accounts.seq + 1
   FROM unnest($1::text[], $2::bigint[]) AS v(id, cost) WHERE accounts.id = v.id
   RETURNING accounts.id, accounts.seq, accounts.balance, accounts.total_usage`,
);
// Rows are inserted (and their conflicts locked) in the order of the arrays: key, then period.
const addKeyUsage = preparedQuery<KeyUsageRow>(
  `INSERT INTO key_usage (key_hash, period, usage, byok_usage)
   SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
   ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, byok_usage = key_usage.byok_usage + excluded.byok_usage
   RETURNING key_hash, period, usage, byok_usage`,
);

function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

/** Rows as one array per column. */
function columns(rows: readonly unknown[][], width: number): unknown[][] {
  const out: unknown[][] = Array.from({ length: width }, () => new Array<unknown>(rows.length));
  rows.forEach((row, r) => row.forEach((value, c) => ((out[c] as unknown[])[r] = value)));
  return out;
}

/**
 * A group commit on PostgreSQL: each table written with one statement per ROWS_PER_STATEMENT rows, its
 * rows passed as arrays, so that the statement's text never changes (no query building per commit,
 * and the server parses one text); rows locked in a fixed order (accounts by id, then key usage by key
 * and period) so that processes sharing the database never deadlock.
 */
export const postgresCommitSteps: CommitSteps = {
  async insertGenerations(trx: Kysely<Database>, charges: readonly Charge[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    for (const rows of chunks(charges)) {
      const result = await trx.executeQuery(insertGenerations(columns(rows.map(generationValues), GENERATION_COLUMNS.length)));
      for (const r of result.rows) inserted.add(r.id);
    }
    return inserted;
  },

  async chargeAccounts(trx: Kysely<Database>, deltas: readonly AccountDelta[]): Promise<Map<string, AccountSnapshot>> {
    const snapshots = new Map<string, AccountSnapshot>();
    if (deltas.length === 0) return snapshots;
    await trx.executeQuery(lockAccounts([deltas.map((d) => d.accountId)]));
    for (const rows of chunks(deltas)) {
      const result = await trx.executeQuery(chargeAccounts([rows.map((d) => d.accountId), rows.map((d) => d.cost)]));
      for (const r of result.rows) snapshots.set(r.id, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
    }
    return snapshots;
  },

  async addKeyUsage(trx: Kysely<Database>, deltas: readonly UsageDelta[]): Promise<KeyUsageRow[]> {
    const out: KeyUsageRow[] = [];
    for (const rows of chunks(deltas)) {
      const result = await trx.executeQuery(
        addKeyUsage([rows.map((d) => d.keyHash), rows.map((d) => d.period), rows.map((d) => d.usage), rows.map((d) => d.byokUsage)]),
      );
      out.push(...result.rows);
    }
    return out;
  },
};
