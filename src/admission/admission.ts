import { isPromise, mapAwaitable, type Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { Config } from '../config/schema.js';
import type { Account, KeyRecord } from '../ledger/ledger.js';
import type { Nano } from '../ledger/money.js';
import { periodEnd, periodKeys } from '../ledger/periods.js';
import type { AdmitRequest, HoldStore, HoldView, Refusal } from '../limits/hold-store.js';
import type { AccountMoney } from './account-money.js';
import { accountSubject, inFlightBudget, inFlightMayApply, inFlightRules, type InFlightRules, type RequestKind } from './applicability.js';
import { balanceCannotCover, inFlightBudgetExhausted, keyLimitReached, negativeBalance, weightExceedsBudget } from './credit-errors.js';
import { estimate, type Estimate, type EstimateInput } from './estimate.js';
import { Ticket } from './ticket.js';
import { TypicalDurations } from './typical-durations.js';

export interface AdmissionRequest extends Omit<EstimateInput, 'completionTokens'> {
  id: string;
  key: KeyRecord;
  account: Account;
  /** The request's completion-token cap, if it set one. */
  maxTokens: number | undefined;
  kind: RequestKind;
  /** The negative balance was already refused (checkBalanceNotNegative ran for this request). */
  balanceChecked?: boolean;
}

/** What a request adds to its key's usage as the limit counts it. */
function keyAmountOf(key: KeyRecord, est: Estimate): Nano {
  return key.includeByokInLimit ? est.keyWithByok : est.credits;
}

/** What a running request is assumed to take when its model has no recent requests. */
const UNKNOWN_DURATION_MS = 60_000;

/**
 * Whole seconds until enough held or settling cost is released for `need` to fit (at least 1): a
 * settling hold is released when its window ends; a running one when its request ends (assumed to
 * take `runningMs` from now) and its actual cost's window after it.
 */
export function retryAfterSeconds(holds: readonly HoldView[], need: Nano, now: number, windowMs: number, runningMs: number): number {
  const released = holds.map((h) => ({ amount: h.amount, at: h.settling ? h.until : now + runningMs + windowMs })).sort((a, b) => a.at - b.at);
  let freed = 0n;
  let wait = runningMs + windowMs;
  for (const r of released) {
    freed += r.amount;
    if (freed >= need) {
      wait = r.at - now;
      break;
    }
  }
  return Math.max(1, Math.ceil(wait / 1000));
}

/**
 * Credit admission, decided before any provider is called (spec, Errors / 402): a negative balance,
 * the key's limit, a balance that cannot cover the estimate, then the in-flight budget. An admitted
 * request holds its estimate and gets a Ticket that settles it.
 */
export class Admission {
  private readonly rules: InFlightRules;
  private readonly durations = new TypicalDurations();

  constructor(private readonly deps: { holds: HoldStore; money: AccountMoney; clock: Clock; config: Config }) {
    this.rules = inFlightRules(deps.config);
  }

  /** How long a running request of `model` is assumed to take: recently typical, within 1 s and the request deadline. */
  private runningMs(model: string | undefined): number {
    const typical = (model === undefined ? undefined : this.durations.typical(model)) ?? UNKNOWN_DURATION_MS;
    return Math.min(Math.max(typical, 1000), this.deps.config.limits.request_deadline_ms);
  }

  /** What an account's in-flight budget is now, for the admin view. */
  async status(account: Account): Promise<{ subject: boolean; budget: Nano; held: Nano }> {
    const view = await this.deps.money.view(account.id);
    return {
      subject: accountSubject(this.rules, { ...account, totalUsage: view.totalUsage }, view.balance, this.deps.clock.now()),
      budget: inFlightBudget(this.rules, view.balance),
      held: view.budgetHeld,
    };
  }

  /**
   * Refuses a prepaid account whose balance (as every process sees it) is negative, free models
   * included. Admission checks it too; this is for the checks that come before admission's (CONTRACT §6).
   */
  async checkBalanceNotNegative(account: Account): Promise<void> {
    if (account.type !== 'prepaid') return;
    const { balance } = await this.deps.money.view(account.id);
    if (balance < 0n) throw negativeBalance(balance);
  }

  /** The request's holds, or its 402; at once (a ticket, or a throw) when the hold store answers at once (awaitable.ts). */
  admit(req: AdmissionRequest): Awaitable<Ticket> {
    // Built field by field, not spread from `req`: every input then has one shape, and estimate()'s loads
    // stay monomorphic (a spread copy took a shape of its own and made them megamorphic: ~11,000
    // instructions a request, bench/README.md).
    const input: EstimateInput = {
      attempts: req.attempts,
      messages: req.messages,
      sideText: req.sideText,
      addedPromptTokens: req.addedPromptTokens,
      completionTokens: req.maxTokens ?? this.rules.defaultMaxTokens,
      choices: req.choices,
      byokProviders: req.byokProviders,
      byokFeeFraction: req.byokFeeFraction,
      pluginCharges: req.pluginCharges,
    };
    // The byte bound overestimates; before refusing, count the prompt with the real tokenizer.
    const recount = (err: unknown): Awaitable<Ticket> => {
      if (!(err instanceof GatewayError) || err.status !== 402) throw err;
      return this.tryAdmit(req, estimate(input, true));
    };
    let first: Awaitable<Ticket>;
    try {
      first = this.tryAdmit(req, estimate(input, false));
    } catch (err) {
      return recount(err);
    }
    return isPromise(first) ? first.catch(recount) : first;
  }

  /** The spec's 402 for a refusal of the store, in the contract's order of checks. */
  private refusal(req: AdmissionRequest, est: Estimate, r: Refusal): GatewayError {
    const now = this.deps.clock.now();
    const { key } = req;
    switch (r.refused) {
      case 'negative':
        return negativeBalance(r.balance);
      case 'key': {
        const limit = key.limit ?? 0n;
        const left = limit > r.used ? limit - r.used : 0n;
        return keyLimitReached({
          limit,
          remaining: left > r.held ? left - r.held : 0n,
          estimate: keyAmountOf(key, est),
          reset: key.limitReset,
          resetsAt: key.limitReset ? periodEnd(key.limitReset, now) : null,
        });
      }
      case 'balance':
        return balanceCannotCover({ available: r.balance - r.held, estimate: est.credits });
      case 'weight':
        return weightExceedsBudget({ budget: r.budget, estimate: est.tokenCredits });
      case 'budget':
        return this.budgetRefusal(req, r.held, r.budget, est.tokenCredits, r.holds, r.now);
      default:
        throw new Error(`unexpected refusal ${r.refused}`);
    }
  }

  /** The budget is full: `others` are the holds besides this request's `estimate`. */
  private budgetRefusal(req: AdmissionRequest, others: Nano, budget: Nano, estimate: Nano, holds: readonly HoldView[], now: number): GatewayError {
    const runningMs = this.runningMs(req.attempts[0]?.model.id);
    return inFlightBudgetExhausted({
      held: others,
      budget,
      estimate,
      retryAfterSeconds: retryAfterSeconds(holds, others + estimate - budget, now, this.rules.settlementWindowMs, runningMs),
    });
  }

  /**
   * One atomic step in the store: the negative balance, the key's limit, the balance and the in-flight
   * budget are checked against the money view every process shares, and every hold is taken, or none.
   */
  private tryAdmit(req: AdmissionRequest, est: Estimate): Awaitable<Ticket> {
    const now = this.deps.clock.now();
    // During the rollout a young account stays subject while its total usage is below min_spend:
    // that total is read as every process sees it (the cached account's may lag).
    if (this.rules.newerOnly && now - req.account.createdAt < this.rules.newerMaxAgeMs) {
      return this.deps.money.account(req.account).then((account) => this.admitAs(req, est, account, now));
    }
    return this.admitAs(req, est, req.account, now);
  }

  private admitAs(req: AdmissionRequest, est: Estimate, account: Account, now: number): Awaitable<Ticket> {
    const { holds, clock, config, money } = this.deps;
    const { key, id } = req;
    const leaseMs = config.limits.hold_lease_ms;
    const keyAmount = keyAmountOf(key, est);
    const prepaid = account.type === 'prepaid';
    const r: AdmitRequest = { accountId: account.id, id, leaseMs, refuseNegative: prepaid && !req.balanceChecked };
    if (key.limit !== null && keyAmount > 0n) {
      r.key = {
        hash: key.hash,
        period: key.limitReset ? periodKeys(now)[key.limitReset] : 'all',
        includeByok: key.includeByokInLimit,
        limit: key.limit,
        amount: keyAmount,
      };
    }
    if (prepaid && est.credits > 0n) r.balance = est.credits;
    // The budget holds the token estimate (CONTRACT §7); a request fee, images and plugins are not held in it.
    if (est.tokenCredits > 0n && inFlightMayApply(this.rules, account, est, req.kind, now)) {
      r.budget = { amount: est.tokenCredits, threshold: this.rules.balanceThreshold, fractionPpm: this.rules.fractionPpm, ceiling: this.rules.ceiling };
    }
    const model = req.attempts[0]?.model.id;
    const ticket = (taken: boolean) =>
      new Ticket({
        holds: taken ? holds : undefined,
        clock,
        accountId: account.id,
        id,
        keyHash: key.hash,
        leaseMs,
        held: est.credits,
        windowMs: this.rules.settlementWindowMs,
        // The request is aborted at its deadline and settles; its holds are renewed until then.
        renewUntil: now + config.limits.request_deadline_ms + this.rules.settlementWindowMs,
        onEnded: model === undefined ? undefined : (ms) => this.durations.record(model, ms),
      });
    // Nothing to hold or check: no round trip to the store.
    if (!r.key && r.balance === undefined && !r.budget && !r.refuseNegative) return ticket(false);
    return mapAwaitable(money.admit(r), (result) => {
      if (!result.ok) throw this.refusal(req, est, result);
      return ticket(true);
    });
  }
}
