import type { Kysely } from 'kysely';
import { GENERATION_COLUMNS, generationValues, type CommitWriter, type KeyUsageRow, type WrittenCommit } from './commit-writer.js';
import type { AccountSnapshot, Charge } from './ledger.js';
import { chargedAt, periodKeys } from './periods.js';
import { ArrayElementError, integerArrayLiteral, textArrayLiteral } from './postgres-array.js';
import { preparedQuery } from './prepared-query.js';
import type { Database } from './schema.js';
import { big } from './rows.js';

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
const columns = GENERATION_COLUMNS.join(', ');
const n = GENERATION_COLUMNS.length;

/**
 * The whole group commit as one statement: one round trip, atomic without BEGIN and COMMIT. The
 * charges come as one array per column (`unnest`), and each charge's period names (computed in
 * periods.ts) as three more, so the text never changes whatever the number of charges. Money is bigint
 * throughout (pg sends each bigint as its decimal text; the sums are numeric, cast back): exact.
 *
 * The steps run in the order their data forces, each blocking on the one before: `recorded` inserts
 * the generations not recorded yet (ON CONFLICT DO NOTHING: a charge already recorded is skipped);
 * `accounts_moved` sums what was recorded per account (an aggregate: every insert is done first), takes
 * the accounts in id order (sorted, then locked one by one: FOR UPDATE after ORDER BY) and moves them;
 * `keys_moved` waits for every account to be moved (the count in its WHERE is computed once, before
 * its first row) and adds to the key usage per period in key and period order; `rollups_moved` then adds
 * to the hourly spend rollups (reports read them) in their key order. So every process locks accounts
 * in id order, then key usage rows, then rollup rows in key order, and none ever deadlocks another.
 */
const groupCommit = preparedQuery<{ kind: 'g' | 'a' | 'k'; id: string; period: string | null; seq: unknown; x: unknown; y: unknown }>(
  `WITH input AS (
     SELECT * FROM unnest(${GENERATION_COLUMNS.map((c, i) => `$${i + 1}::${GENERATION_TYPES[c]}[]`).join(', ')}, $${n + 1}::text[], $${n + 2}::text[], $${n + 3}::text[])
       AS c(${columns}, daily, weekly, monthly)
   ),
   recorded AS (
     INSERT INTO generations (${columns}) SELECT ${columns} FROM input ORDER BY id
     ON CONFLICT (id) DO NOTHING RETURNING id
   ),
   charged AS (SELECT input.* FROM input JOIN recorded USING (id)),
   accounts_moved AS (
     UPDATE accounts SET balance = accounts.balance - v.cost, total_usage = accounts.total_usage + v.cost, seq = accounts.seq + 1
     FROM (
       SELECT a.id, d.cost FROM accounts a
       JOIN (SELECT account_id, sum(total_cost)::bigint AS cost FROM charged GROUP BY account_id) AS d ON a.id = d.account_id
       ORDER BY a.id FOR UPDATE OF a
     ) AS v
     WHERE accounts.id = v.id
     RETURNING accounts.id, accounts.seq, accounts.balance, accounts.total_usage
   ),
   keys_moved AS (
     INSERT INTO key_usage (key_hash, period, usage, byok_usage)
     SELECT key_hash, p.period, sum(total_cost)::bigint, sum(byok_usage)::bigint
     FROM charged CROSS JOIN LATERAL (VALUES ('all'), (daily), (weekly), (monthly)) AS p(period)
     WHERE (SELECT count(*) FROM accounts_moved) >= 0
     GROUP BY key_hash, p.period ORDER BY key_hash, p.period
     ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, byok_usage = key_usage.byok_usage + excluded.byok_usage
     RETURNING key_hash, period, usage, byok_usage
   ),
   rollups_moved AS (
     INSERT INTO spend_hourly (bucket, account_id, key_hash, model, provider, requests, cost, byok_usage, prompt_tokens, completion_tokens)
     SELECT ((created_at + latency_ms) / 3600000) * 3600000 AS bucket, account_id, key_hash, model, provider,
            count(*), sum(total_cost)::bigint, sum(byok_usage)::bigint, sum(tokens_prompt)::bigint, sum(tokens_completion)::bigint
     FROM charged
     WHERE (SELECT count(*) FROM keys_moved) >= 0
     GROUP BY 1, account_id, key_hash, model, provider ORDER BY 1, account_id, key_hash, model, provider
     ON CONFLICT (bucket, account_id, key_hash, model, provider) DO UPDATE SET requests = spend_hourly.requests + excluded.requests,
       cost = spend_hourly.cost + excluded.cost, byok_usage = spend_hourly.byok_usage + excluded.byok_usage,
       prompt_tokens = spend_hourly.prompt_tokens + excluded.prompt_tokens, completion_tokens = spend_hourly.completion_tokens + excluded.completion_tokens
     RETURNING 1
   )
   SELECT 'g' AS kind, id, NULL::text AS period, NULL::bigint AS seq, NULL::bigint AS x, NULL::bigint AS y FROM recorded
   UNION ALL SELECT 'a', id, NULL, seq, balance, total_usage FROM accounts_moved
   UNION ALL SELECT 'k', key_hash, period, NULL, usage, byok_usage FROM keys_moved`,
);

/** How each column's array literal is written (GENERATION_COLUMNS order); a type without a writer here stops the module loading. */
const LITERAL_OF = GENERATION_COLUMNS.map((c) => {
  switch (GENERATION_TYPES[c]) {
    case 'text':
      return (values: unknown[]) => textArrayLiteral(values as (string | null)[]);
    case 'integer':
    case 'bigint':
      return (values: unknown[]) => integerArrayLiteral(values as (number | bigint | null)[]);
    default:
      throw new Error(`no array literal for column ${c} of type ${GENERATION_TYPES[c]}`);
  }
});

/**
 * The generation rows as one array literal per column (postgres-array.ts), the statement's first
 * parameters: built here, because node-postgres's own conversion of an array parameter (two regular
 * expression replaces an element, every element quoted) cost more than the rest of a commit's
 * parameters together.
 */
function columnLiterals(rows: readonly unknown[][]): string[] {
  const out: string[] = [];
  const column: unknown[] = new Array<unknown>(rows.length);
  for (const [c, literal] of LITERAL_OF.entries()) {
    for (let r = 0; r < rows.length; r++) column[r] = (rows[r] as unknown[])[c];
    try {
      out.push(literal(column));
    } catch (err) {
      if (!(err instanceof ArrayElementError)) throw err;
      // Whose, and which column (the generation id is the first column).
      const id = String((rows[err.index] as unknown[])[0]);
      throw new TypeError(`generation ${id}, column ${GENERATION_COLUMNS[c]}: ${err.message}`, { cause: err });
    }
  }
  return out;
}

/**
 * A group commit on PostgreSQL: one statement (see groupCommit), so one round trip whatever the number
 * of charges (each round trip costs this process tens of microseconds of CPU, however little it
 * carries). A batch is at most MAX_BATCH charges (kysely-ledger.ts), well within the statement timeout.
 * PostgreSQL has no charge journal (the ledger writes its group commits to the tables at once): no
 * journal entries to drop.
 */
export const postgresCommitWriter: CommitWriter = {
  async write(db: Kysely<Database>, charges: readonly Charge[]): Promise<WrittenCommit> {
    const params = columnLiterals(charges.map(generationValues));
    const periods = charges.map((c) => periodKeys(chargedAt(c)));
    params.push(textArrayLiteral(periods.map((p) => p.daily)), textArrayLiteral(periods.map((p) => p.weekly)), textArrayLiteral(periods.map((p) => p.monthly)));
    const { rows } = await db.executeQuery(groupCommit(params));
    const recorded = new Set<string>();
    const accounts = new Map<string, AccountSnapshot>();
    const keyRows: KeyUsageRow[] = [];
    for (const r of rows) {
      if (r.kind === 'g') recorded.add(r.id);
      else if (r.kind === 'a') accounts.set(r.id, { seq: big(r.seq), balance: big(r.x), totalUsage: big(r.y) });
      else keyRows.push({ key_hash: r.id, period: r.period as string, usage: r.x, byok_usage: r.y });
    }
    return { recorded, accounts, keyRows };
  },
};
