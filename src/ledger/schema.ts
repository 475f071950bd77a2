/** Table shapes as Kysely sees them. Money columns are BIGINT nanocredits; times are epoch ms. */
import type { Generated } from 'kysely';
type Int = number | bigint | string;

export interface AccountsTable {
  id: string;
  name: string;
  type: string;
  balance: Int;
  total_purchased: Int;
  total_usage: Int;
  created_at: Int;
  free_model_limits_exempt: Int;
  seq: Generated<Int>;
}

export interface CreditEntriesTable {
  id: string;
  account_id: string;
  kind: string;
  amount: Int;
  created_at: Int;
}

export interface ApiKeysTable {
  hash: string;
  account_id: string;
  name: string;
  label: string;
  disabled: Int;
  limit_amount: Int | null;
  limit_reset: string | null;
  include_byok_in_limit: Int;
  expires_at: Int | null;
  created_at: Int;
  updated_at: Int | null;
  deleted_at: Int | null;
  management: Int;
}

/** The secrets (by hash) that authenticate as a key: its current one, and rotated ones until valid_until. */
export interface KeySecretsTable {
  secret_hash: string;
  key_hash: string;
  valid_until: Int | null;
  created_at: Int;
}

export interface KeyUsageTable {
  key_hash: string;
  period: string;
  usage: Int;
  byok_usage: Int;
}

export interface ByokSecretsTable {
  account_id: string;
  provider: string;
  ciphertext: string;
  created_at: Int;
}

export interface GenerationsTable {
  id: string;
  account_id: string;
  key_hash: string;
  model: string;
  provider: string;
  tokens_prompt: Int;
  tokens_completion: Int;
  total_cost: Int;
  byok_usage: Int;
  is_byok: Int;
  streamed: Int;
  cancelled: Int;
  finish_reason: string | null;
  created_at: Int;
  latency_ms: Int;
  usage_source: string | null;
}

/** Spend per hour (`bucket`, epoch ms of its start), account, key, model and provider. */
export interface SpendHourlyTable {
  bucket: Int;
  account_id: string;
  key_hash: string;
  model: string;
  provider: string;
  requests: Int;
  cost: Int;
  byok_usage: Int;
  prompt_tokens: Int;
  completion_tokens: Int;
}

export interface SettingsTable {
  name: string;
  value: string;
}

/** Alert crossings already sent (src/alerts): one row per subject, event and period. */
export interface AlertCrossingsTable {
  subject: string;
  event: string;
  period: string;
  /** Epoch ms the crossing stands until (a cooldown's end); null: until it is re-armed. */
  until_ms: Int | null;
  created_at: Int;
}

/**
 * One group commit's charges, durable but not all applied to the tables yet (charge-journal.ts): a
 * sequence number never reused, and their ChargeRecords as a JSON array.
 */
export interface ChargeJournalTable {
  seq: Generated<Int>;
  charges: string;
}

export interface Database {
  accounts: AccountsTable;
  credit_entries: CreditEntriesTable;
  api_keys: ApiKeysTable;
  key_secrets: KeySecretsTable;
  key_usage: KeyUsageTable;
  byok_secrets: ByokSecretsTable;
  generations: GenerationsTable;
  settings: SettingsTable;
  spend_hourly: SpendHourlyTable;
  alert_crossings: AlertCrossingsTable;
  charge_journal: ChargeJournalTable;
}
