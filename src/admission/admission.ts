import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { Config } from '../config/schema.js';
import type { Account, Accounts, Charges, KeyRecord, Keys } from '../ledger/ledger.js';
import { usageAgainstLimit } from '../ledger/key-limit.js';
import type { Nano } from '../ledger/money.js';
import { periodEnd } from '../ledger/periods.js';
import type { HoldStore, HoldView } from '../limits/hold-store.js';
import { accountSubject, inFlightApplies, inFlightBudget, inFlightRules, type InFlightRules, type RequestKind } from './applicability.js';
import { balanceCannotCover, inFlightBudgetExhausted, keyLimitReached, negativeBalance, weightExceedsBudget } from './credit-errors.js';
import { estimate, type Estimate, type EstimateInput } from './estimate.js';
import { RUNNING_HOLD_LEASE_MS, Ticket } from './ticket.js';
import { TypicalDurations } from './typical-durations.js';

export interface AdmissionRequest extends Omit<EstimateInput, 'completionTokens'> {
  id: string;
  key: KeyRecord;
  account: Account;
  /** The request's completion-token cap, if it set one. */
  maxTokens: number | undefined;
  /** `ledger.version` when `account` was read. */
  readAt: number;
  kind: RequestKind;
}

export const scopes = {
  budget: (accountId: string) => `budget:${accountId}`,
  balance: (accountId: string) => `running:acct:${accountId}`,
  key: (hash: string) => `running:key:${hash}`,
};

/** What a request adds to its key's usage as the limit counts it. */
function keyAmountOf(key: KeyRecord, est: Estimate): Nano {
  return key.includeByokInLimit ? est.keyWithByok : est.credits;
}

/** The key's limit cannot cover `amount`: `others` are what its other running requests hold. */
function keyRefusal(key: KeyRecord, limit: Nano, left: Nano, others: Nano, amount: Nano, now: number): GatewayError {
  return keyLimitReached({
    limit,
    remaining: left > others ? left - others : 0n,
    estimate: amount,
    reset: key.limitReset,
    resetsAt: key.limitReset ? periodEnd(key.limitReset, now) : null,
  });
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

  constructor(private readonly deps: { holds: HoldStore; ledger: Accounts & Keys & Pick<Charges, 'version'>; clock: Clock; config: Config }) {
    this.rules = inFlightRules(deps.config);
  }

  /** How long a running request of `model` is assumed to take: recently typical, within 1 s and the request deadline. */
  private runningMs(model: string | undefined): number {
    const typical = (model === undefined ? undefined : this.durations.typical(model)) ?? UNKNOWN_DURATION_MS;
    return Math.min(Math.max(typical, 1000), this.deps.config.limits.request_deadline_ms);
  }

  /** What an account's in-flight budget is now, for the admin view. */
  async status(account: Account): Promise<{ subject: boolean; budget: Nano; held: Nano }> {
    const now = this.deps.clock.now();
    return {
      subject: accountSubject(this.rules, account, now),
      budget: inFlightBudget(this.rules, account.balance),
      held: await this.deps.holds.held(scopes.budget(account.id), now),
    };
  }

  /** Refuses a prepaid account whose balance is negative, free models included. */
  checkBalanceNotNegative(account: Account): void {
    if (account.type === 'prepaid' && account.balance < 0n) throw negativeBalance(account.balance);
  }

  async admit(req: AdmissionRequest): Promise<Ticket> {
    const input: EstimateInput = { ...req, completionTokens: req.maxTokens ?? this.rules.defaultMaxTokens };
    const bound = estimate(input, false);
    try {
      return await this.tryAdmit(req, bound);
    } catch (err) {
      // The byte bound overestimates; before refusing, count the prompt with the real tokenizer.
      if (!(err instanceof GatewayError) || err.status !== 402) throw err;
      return this.tryAdmit(req, estimate(input, true));
    }
  }

  /**
   * Checks the holds just taken against the ledger as it is now: the holds are read first, then the
   * ledger, and a running hold is dropped only after its charge is committed, so every charge or hold
   * of a concurrent request is seen at least once. (The balance read before acquiring may be stale
   * by the time the holds are taken when the ledger is across a network.)
   */
  private async verify(req: AdmissionRequest, est: Estimate, taken: readonly string[], budgetScope: string | undefined): Promise<void> {
    const { holds, ledger, clock } = this.deps;
    // Nothing changed money or keys since the account was read: what admitted the holds is current.
    if (ledger.version === req.readAt) return;
    const now = clock.now();
    const { key, account } = req;
    const keyScope = taken.includes(scopes.key(key.hash)) ? scopes.key(key.hash) : undefined;
    const balanceScope = taken.includes(scopes.balance(account.id)) ? scopes.balance(account.id) : undefined;
    const [keyHeld, balanceHeld, held] = await Promise.all([
      keyScope ? holds.held(keyScope, now) : 0n,
      balanceScope ? holds.held(balanceScope, now) : 0n,
      budgetScope ? holds.held(budgetScope, now) : 0n,
    ]);
    const fresh = (await ledger.getAccount(account.id)) ?? account;
    if (keyScope && key.limit !== null) {
      const left = await this.keyLeft(key, key.limit, now);
      const amount = keyAmountOf(key, est);
      if (keyHeld > left) throw keyRefusal(key, key.limit, left, keyHeld - amount, amount, now);
    }
    if (balanceScope && balanceHeld > fresh.balance) {
      throw balanceCannotCover({ available: fresh.balance - (balanceHeld - est.credits), estimate: est.credits });
    }
    if (budgetScope) {
      const budget = inFlightBudget(this.rules, fresh.balance);
      if (held > budget) {
        if (est.credits > budget) throw weightExceedsBudget({ budget, estimate: est.credits });
        throw this.budgetRefusal(req, held - est.credits, budget, est.credits, await holds.list(budgetScope, now), now);
      }
    }
  }

  /** What is left of a key's limit in its current period. */
  private async keyLeft(key: KeyRecord, limit: Nano, now: number): Promise<Nano> {
    const used = usageAgainstLimit(key, await this.deps.ledger.keyUsage(key.hash, now));
    return limit > used ? limit - used : 0n;
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

  private async tryAdmit(req: AdmissionRequest, est: Estimate): Promise<Ticket> {
    const { holds, clock } = this.deps;
    const now = clock.now();
    // Running holds count for one lease, which the ticket renews while the request runs.
    const until = now + RUNNING_HOLD_LEASE_MS;
    const { key, account, id } = req;
    const taken: string[] = [];
    let budgetScope: string | undefined;
    const undo = () => Promise.all([...taken, ...(budgetScope ? [budgetScope] : [])].map((s) => holds.release(s, id)));
    try {
      const keyAmount = keyAmountOf(key, est);
      if (key.limit !== null && keyAmount > 0n) {
        const left = await this.keyLeft(key, key.limit, now);
        const r = await holds.acquire(scopes.key(key.hash), id, keyAmount, left, now, until);
        if (!r.ok) throw keyRefusal(key, key.limit, left, r.held, keyAmount, now);
        taken.push(scopes.key(key.hash));
      }

      if (account.type === 'prepaid' && est.credits > 0n) {
        const r = await holds.acquire(scopes.balance(account.id), id, est.credits, account.balance > 0n ? account.balance : 0n, now, until);
        if (!r.ok) throw balanceCannotCover({ available: account.balance - r.held, estimate: est.credits });
        taken.push(scopes.balance(account.id));
      }

      if (est.credits > 0n && inFlightApplies(this.rules, account, est, req.kind, now)) {
        const budget = inFlightBudget(this.rules, account.balance);
        if (est.credits > budget) throw weightExceedsBudget({ budget, estimate: est.credits });
        const r = await holds.acquire(scopes.budget(account.id), id, est.credits, budget, now, until);
        if (!r.ok) throw this.budgetRefusal(req, r.held, budget, est.credits, r.holds, now);
        budgetScope = scopes.budget(account.id);
      }
      await this.verify(req, est, taken, budgetScope);
      const model = req.attempts[0]?.model.id;
      const { request_deadline_ms } = this.deps.config.limits;
      return new Ticket({
        holds,
        clock,
        id,
        running: taken,
        budgetScope,
        windowMs: this.rules.settlementWindowMs,
        // The request is aborted at its deadline and settles; its charge then has a window's time to land.
        renewUntil: now + request_deadline_ms + this.rules.settlementWindowMs,
        onEnded: model === undefined ? undefined : (ms) => this.durations.record(model, ms),
      });
    } catch (err) {
      await undo();
      throw err;
    }
  }
}
