/** The API's answers, as far as the dashboard reads them. */

/** A key's limit and usage, as GET /api/v1/key and the key listings all give them. */
export interface KeyLimitAndUsage {
  limit: number | null;
  limit_reset: string | null;
  limit_remaining: number | null;
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
}

export interface KeyStatus extends KeyLimitAndUsage {
  label: string;
  byok_usage: number;
  is_free_tier: boolean;
  free_model_daily_requests: { used: number; limit: number; remaining: number };
  expires_at: string | null;
  is_management_key: boolean;
}

export interface Credits {
  total_credits: number;
  total_usage: number;
}

export interface GenerationItem {
  id: string;
  model: string;
  provider_name?: string;
  provider?: string;
  tokens_prompt: number;
  tokens_completion: number;
  total_cost: number;
  latency?: number | null;
  latency_ms?: number | null;
  finish_reason: string | null;
  streamed: boolean;
  cancelled: boolean;
  created_at: string;
  key_hash?: string;
}

export interface KeyActivityRow {
  date: string;
  model: string;
  requests: number;
  usage: number;
}

/** A key as the management API (Key) and the admin API (KeyInfo) both give it. */
export interface KeyRow extends KeyLimitAndUsage {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  expires_at: string | null;
  created_at: string;
  management?: boolean;
}

export interface Account {
  id: string;
  name: string;
  type: string;
  balance: number;
  total_purchased: number;
  total_usage: number;
  created_at: string;
  free_model_limits_exempt: boolean;
}

export interface Model {
  id: string;
  name: string;
}
