import type { Config } from '../config/schema.js';
import { limitRemaining } from '../ledger/key-limit.js';
import type { Account, Generation, KeyRecord, KeyUsage } from '../ledger/ledger.js';
import { freeDailyLimit, isFreeTier } from '../admission/free-limits.js';
import { creditsToJson } from '../ledger/money.js';
import type { AccountCoreJson, KeyInfoJson, KeyStatusJson, ManagedKeyJson } from './answer-schemas.js';

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function accountView(a: Account): AccountCoreJson {
  return {
    id: a.id,
    name: a.name,
    type: a.type,
    balance: creditsToJson(a.balance),
    total_purchased: creditsToJson(a.totalPurchased),
    total_usage: creditsToJson(a.totalUsage),
    created_at: new Date(a.createdAt).toISOString(),
    free_model_limits_exempt: a.freeModelLimitsExempt,
  };
}

/** A key's limit and usage, as every key answer reports them (admin KeyInfo, the management Key, /key). */
function limitAndUsage(k: KeyRecord, usage: KeyUsage) {
  const remaining = limitRemaining(k, usage);
  return {
    limit: k.limit === null ? null : creditsToJson(k.limit),
    limit_reset: k.limitReset,
    limit_remaining: remaining === null ? null : creditsToJson(remaining),
    include_byok_in_limit: k.includeByokInLimit,
    usage: creditsToJson(usage.all.usage),
    usage_daily: creditsToJson(usage.daily.usage),
    usage_weekly: creditsToJson(usage.weekly.usage),
    usage_monthly: creditsToJson(usage.monthly.usage),
    byok_usage: creditsToJson(usage.all.byokUsage),
  };
}

/** BYOK usage per period, as OpenRouter's SDK reads it on the management Key and /key. */
function byokPeriods(usage: KeyUsage) {
  return {
    byok_usage_daily: creditsToJson(usage.daily.byokUsage),
    byok_usage_weekly: creditsToJson(usage.weekly.byokUsage),
    byok_usage_monthly: creditsToJson(usage.monthly.byokUsage),
  };
}

export function keyInfoView(k: KeyRecord, usage: KeyUsage): KeyInfoJson {
  return {
    hash: k.hash,
    name: k.name,
    label: k.label,
    disabled: k.disabled,
    ...limitAndUsage(k, usage),
    expires_at: isoOrNull(k.expiresAt),
    created_at: new Date(k.createdAt).toISOString(),
    updated_at: isoOrNull(k.updatedAt),
    management: k.management,
  };
}

/**
 * A key as the management API answers it (CONTRACT §9): the shape of OpenRouter's SDK (`Key`), with
 * neutral values where a field means nothing here. `workspace_id` is the key's account.
 */
export function managedKeyView(k: KeyRecord, usage: KeyUsage): ManagedKeyJson {
  return {
    hash: k.hash,
    name: k.name,
    label: k.label,
    disabled: k.disabled,
    ...limitAndUsage(k, usage),
    ...byokPeriods(usage),
    created_at: new Date(k.createdAt).toISOString(),
    updated_at: isoOrNull(k.updatedAt),
    expires_at: isoOrNull(k.expiresAt),
    creator_user_id: null,
    workspace_id: k.accountId,
    external_user: null,
  };
}

/** GET /api/v1/key: the key's limits and usage, in the shape OpenRouter's SDK parses. */
export function keyStatusView(config: Config, k: KeyRecord, usage: KeyUsage, account: Account, freeRequestsToday: number): KeyStatusJson {
  const dailyLimit = freeDailyLimit(config, account);
  return {
    label: k.label,
    ...limitAndUsage(k, usage),
    ...byokPeriods(usage),
    is_free_tier: isFreeTier(config, account),
    free_model_daily_requests: {
      used: freeRequestsToday,
      limit: dailyLimit,
      remaining: Math.max(0, dailyLimit - freeRequestsToday),
    },
    expires_at: isoOrNull(k.expiresAt),
    is_management_key: k.management,
    is_provisioning_key: false,
    creator_user_id: null,
    organization_id: null,
    workspace_id: null,
    allowed_data_regions: ['global'],
    rate_limit: { requests: -1, interval: '10s', note: 'deprecated' },
  };
}

/** A generation as the operator's reports list it. */
export function generationAdminView(g: Generation) {
  return {
    id: g.id,
    key_hash: g.keyHash,
    model: g.model,
    provider: g.provider,
    status: g.cancelled ? ('cancelled' as const) : g.finishReason === 'error' ? ('error' as const) : ('completed' as const),
    finish_reason: g.finishReason,
    tokens_prompt: g.tokensPrompt,
    tokens_completion: g.tokensCompletion,
    total_cost: creditsToJson(g.totalCost),
    byok_usage: creditsToJson(g.byokUsage),
    is_byok: g.isByok,
    streamed: g.streamed,
    cancelled: g.cancelled,
    usage_source: g.usageSource,
    latency_ms: g.latencyMs,
    created_at: new Date(g.createdAt).toISOString(),
  };
}
