import type { Config } from '../config/schema.js';
import type { Account } from '../ledger/ledger.js';
import { creditsFromJson, type Nano } from '../ledger/money.js';
import type { Estimate } from './estimate.js';

const DAY_MS = 86_400_000;

/** The in-flight settings in exact units. */
export interface InFlightRules {
  fractionPpm: bigint;
  ceiling: Nano;
  balanceThreshold: Nano;
  newerOnly: boolean;
  newerMaxAgeMs: number;
  newerMinSpend: Nano;
  settlementWindowMs: number;
  defaultMaxTokens: number;
}

export function inFlightRules(config: Config): InFlightRules {
  const f = config.limits.in_flight;
  return {
    fractionPpm: BigInt(Math.round(f.fraction * 1_000_000)),
    ceiling: creditsFromJson(f.ceiling),
    balanceThreshold: creditsFromJson(f.balance_threshold),
    newerOnly: f.newer_accounts.only,
    newerMaxAgeMs: f.newer_accounts.max_age_days * DAY_MS,
    newerMinSpend: creditsFromJson(f.newer_accounts.min_spend),
    settlementWindowMs: f.settlement_window_ms,
    defaultMaxTokens: f.default_max_tokens,
  };
}

/** The in-flight budget: min(fraction × balance, ceiling), never below zero. */
export function inFlightBudget(rules: InFlightRules, balance: Nano): Nano {
  if (balance <= 0n) return 0n;
  const share = (balance * rules.fractionPpm) / 1_000_000n;
  return share < rules.ceiling ? share : rules.ceiling;
}

/** A newer account (CONTRACT §7): younger than max_age_days and with total usage below min_spend. */
export function isNewerAccount(rules: InFlightRules, account: Account, now: number): boolean {
  return now - account.createdAt < rules.newerMaxAgeMs && account.totalUsage < rules.newerMinSpend;
}

export interface RequestKind {
  /** Every model the request may be served by is a free variant. */
  free: boolean;
  /** The request uses a paid plugin. */
  paidPlugin: boolean;
}

/**
 * Whether a request is subject to the in-flight budget (spec, Limits / Credit limits) by every rule
 * but the balance's: prepaid accounts spending their own credits (and, while the rollout's `only`
 * holds, newer); never free-model requests, BYOK requests without a paid plugin, or costs without a
 * token component; never enterprise, subscription or invoice accounts. The balance threshold is
 * applied where the balance is known as every process sees it (the hold store).
 */
export function inFlightMayApply(rules: InFlightRules, account: Account, est: Estimate, kind: RequestKind, now: number): boolean {
  if (kind.free || !est.tokenComponent) return false;
  if (est.allByok && !kind.paidPlugin) return false;
  return accountMaySubject(rules, account, now);
}

/** Prepaid, and newer while the rollout's `only` holds. */
function accountMaySubject(rules: InFlightRules, account: Account, now: number): boolean {
  return account.type === 'prepaid' && (!rules.newerOnly || isNewerAccount(rules, account, now));
}

/** Whether the account's paid requests are subject to the budget at `balance`: the rules above, and below the threshold. */
export function accountSubject(rules: InFlightRules, account: Account, balance: Nano, now: number): boolean {
  return accountMaySubject(rules, account, now) && balance < rules.balanceThreshold;
}
