import { GatewayError } from '../errors.js';
import { formatCredits, type Nano } from '../ledger/money.js';

/** The spec's 402s (Errors / 402), each with its reason, limit_source and a one-line remedy hint. */
const c = formatCredits;

export function inFlightBudgetExhausted(a: { held: Nano; budget: Nano; estimate: Nano; retryAfterSeconds: number }): GatewayError {
  return new GatewayError(
    'in_flight_budget_exhausted',
    `requests in flight, and ones that finished moments ago while their costs settle, hold ${c(a.held)} of this account's in-flight spending budget of ${c(a.budget)} credits; this request needs up to ${c(a.estimate)}`,
    {
      metadata: {
        reason: 'in_flight_budget_exhausted',
        limit_source: 'platform_in_flight_budget',
        remedy_hint: `Wait ${a.retryAfterSeconds} s (Retry-After), then retry: the budget frees up as running requests finish and their costs settle.`,
        in_flight_budget: Number(c(a.budget)),
        in_flight_held: Number(c(a.held)),
        estimated_cost: Number(c(a.estimate)),
      },
      headers: { 'retry-after': String(a.retryAfterSeconds) },
    },
  );
}

export function weightExceedsBudget(a: { budget: Nano; estimate: Nano }): GatewayError {
  return new GatewayError(
    'weight_exceeds_budget',
    `this request's estimated cost of ${c(a.estimate)} credits exceeds the account's whole in-flight spending budget of ${c(a.budget)} credits`,
    {
      metadata: {
        reason: 'weight_exceeds_budget',
        limit_source: 'platform_credits',
        remedy_hint: 'Retrying does not help: lower max_tokens or the prompt size, or add credits.',
        in_flight_budget: Number(c(a.budget)),
        estimated_cost: Number(c(a.estimate)),
      },
    },
  );
}

export function keyLimitReached(a: { limit: Nano; remaining: Nano; estimate: Nano; reset: string | null; resetsAt: number | null }): GatewayError {
  const when = a.resetsAt === null ? '' : `, or wait for it to reset at ${new Date(a.resetsAt).toISOString()} (${a.reset})`;
  return new GatewayError(
    'key_limit_reached',
    `this API key's spending limit of ${c(a.limit)} credits${a.reset ? ` (reset ${a.reset})` : ''} has ${c(a.remaining)} left, which cannot cover this request's estimated cost of ${c(a.estimate)}`,
    {
      metadata: {
        limit_source: 'platform_key_limit',
        remedy_hint: `Raise the key's limit${when}; lower max_tokens to make the request cheaper.`,
        limit: Number(c(a.limit)),
        limit_remaining: Number(c(a.remaining)),
        limit_reset: a.reset,
        estimated_cost: Number(c(a.estimate)),
      },
    },
  );
}

export function balanceCannotCover(a: { available: Nano; estimate: Nano }): GatewayError {
  return new GatewayError(
    'insufficient_credits',
    `the account's available balance of ${c(a.available)} credits cannot cover this request's estimated cost of ${c(a.estimate)}`,
    {
      metadata: {
        limit_source: 'platform_credits',
        remedy_hint: 'Add credits, or lower max_tokens to make the request cheaper.',
        balance_available: Number(c(a.available)),
        estimated_cost: Number(c(a.estimate)),
      },
    },
  );
}

export function negativeBalance(balance: Nano): GatewayError {
  return new GatewayError(
    'insufficient_credits',
    `the account's balance is negative (${c(balance)} credits): every request is refused, free models included, until credits bring it above zero`,
    {
      metadata: {
        limit_source: 'platform_credits',
        remedy_hint: 'Add credits to bring the balance above zero.',
        balance: Number(c(balance)),
      },
    },
  );
}
