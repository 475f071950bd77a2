import type { Selectable } from 'kysely';
import type { Account, AccountType, Generation } from './ledger.js';
import type { AccountsTable, GenerationsTable } from './schema.js';

/** Column values as the drivers give them (bigint, number or numeric text) read as the ledger's types. */
export const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(String(v)));
export const num = (v: unknown): number => Number(v);
export const bool = (v: unknown): boolean => Number(v) !== 0;
/** A boolean as the ledger stores it (an integer column, 0 or 1). */
export const flag = (b: boolean): number => (b ? 1 : 0);

export function toAccount(row: Selectable<AccountsTable>): Account {
  return {
    id: row.id,
    name: row.name,
    type: row.type as AccountType,
    balance: big(row.balance),
    totalPurchased: big(row.total_purchased),
    totalUsage: big(row.total_usage),
    createdAt: num(row.created_at),
    freeModelLimitsExempt: bool(row.free_model_limits_exempt),
  };
}

export function toGeneration(row: GenerationsTable): Generation {
  return {
    id: row.id,
    accountId: row.account_id,
    keyHash: row.key_hash,
    model: row.model,
    provider: row.provider,
    tokensPrompt: num(row.tokens_prompt),
    tokensCompletion: num(row.tokens_completion),
    totalCost: big(row.total_cost),
    byokUsage: big(row.byok_usage),
    isByok: bool(row.is_byok),
    streamed: bool(row.streamed),
    cancelled: bool(row.cancelled),
    finishReason: row.finish_reason,
    usageSource: row.usage_source === 'upstream' || row.usage_source === 'counted' ? row.usage_source : null,
    createdAt: num(row.created_at),
    latencyMs: num(row.latency_ms),
  };
}
