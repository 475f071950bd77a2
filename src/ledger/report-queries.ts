import { sql, type Kysely } from 'kysely';
import type { Account, AccountQuery, Generation, GenerationQuery, SpendDimension, SpendQuery, SpendRow } from './ledger.js';
import { big, num, toAccount, toGeneration } from './rows.js';
import type { Database } from './schema.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The column of spend_hourly each dimension groups by. */
const COLUMN: Record<SpendDimension, 'account_id' | 'key_hash' | 'model' | 'provider'> = {
  account: 'account_id',
  key: 'key_hash',
  model: 'model',
  provider: 'provider',
};

/** LIKE's wildcards in a search text, escaped (with `\`), so that a search matches the text itself. */
const likeText = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listAccounts(db: Kysely<Database>, q: AccountQuery): Promise<{ accounts: Account[]; total: number }> {
  let base = db.selectFrom('accounts');
  if (q.search) base = base.where(sql<boolean>`lower(name) LIKE ${likeText(q.search)} ESCAPE '\\'`);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at').orderBy('id').limit(q.limit).offset(q.offset).execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
  ]);
  return { accounts: rows.map(toAccount), total: num(count?.n ?? 0) };
}

export async function listGenerations(db: Kysely<Database>, q: GenerationQuery): Promise<Generation[]> {
  let query = db.selectFrom('generations').selectAll().where('account_id', '=', q.accountId);
  if (q.keyHash) query = query.where('key_hash', '=', q.keyHash);
  if (q.model) query = query.where('model', '=', q.model);
  if (q.from !== undefined) query = query.where('created_at', '>=', q.from);
  if (q.to !== undefined) query = query.where('created_at', '<', q.to);
  if (q.status === 'cancelled') query = query.where('cancelled', '=', 1);
  else if (q.status === 'error') query = query.where('cancelled', '=', 0).where('finish_reason', '=', 'error');
  else if (q.status === 'completed') {
    query = query.where('cancelled', '=', 0).where((eb) => eb.or([eb('finish_reason', 'is', null), eb('finish_reason', '!=', 'error')]));
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute();
  return rows.map(toGeneration);
}

/** Spend from the hourly rollups, grouped by hour or UTC day and by the query's dimensions, oldest first. */
export async function spend(db: Kysely<Database>, q: SpendQuery): Promise<SpendRow[]> {
  const width = q.bucket === 'day' ? DAY_MS : HOUR_MS;
  const start = sql<string>`(bucket / ${sql.lit(width)}) * ${sql.lit(width)}`;
  let query = db
    .selectFrom('spend_hourly')
    .select([
      start.as('start'),
      (eb) => eb.fn.sum<string>('requests').as('requests'),
      (eb) => eb.fn.sum<string>('cost').as('cost'),
      (eb) => eb.fn.sum<string>('byok_usage').as('byok_usage'),
      (eb) => eb.fn.sum<string>('prompt_tokens').as('prompt_tokens'),
      (eb) => eb.fn.sum<string>('completion_tokens').as('completion_tokens'),
    ])
    .where('bucket', '>=', q.from)
    .where('bucket', '<', q.to);
  if (q.accountId) query = query.where('account_id', '=', q.accountId);
  if (q.keyHash) query = query.where('key_hash', '=', q.keyHash);
  const columns = q.by.map((d) => COLUMN[d]);
  for (const c of columns) query = query.select(c);
  let grouped = query.groupBy([start, ...columns]).orderBy(start);
  for (const c of columns) grouped = grouped.orderBy(c);
  const rows = (await grouped.execute()) as Array<Record<string, unknown>>;
  return rows.map((r) => ({
    start: num(r.start),
    group: Object.fromEntries(q.by.map((d) => [d, String(r[COLUMN[d]])])),
    requests: num(r.requests),
    cost: big(r.cost),
    byokUsage: big(r.byok_usage),
    promptTokens: num(r.prompt_tokens),
    completionTokens: num(r.completion_tokens),
  }));
}
