import type { ActualCost, Ticket } from '../admission/ticket.js';
import { isPromise } from '../awaitable.js';
import type { Charge, Charges, UsageSource } from '../ledger/ledger.js';
import type { Femto, Nano } from '../ledger/money.js';
import type { Metrics } from '../observability/metrics.js';
import { billedCompletionTokens, chargedCost, costOf, type Pricing, type TokenUsage } from '../ledger/pricing.js';
import { chargedAt } from '../ledger/periods.js';

export interface SettlementBase {
  id: string;
  accountId: string;
  keyHash: string;
  model: string;
  provider: string;
  isByok: boolean;
  streamed: boolean;
  startedAt: number;
}

export interface SettleInput {
  usage: TokenUsage;
  /** Whether `usage` is the upstream's report or the gateway's own count. */
  usageSource: UsageSource;
  pricing: Pricing;
  /** Paid plugin charges the request incurred, in femtocredits: rounded with the tokens' cost, once. */
  extras: Femto;
  finishReason: string | null;
  cancelled: boolean;
  endedAt: number;
}

export interface Settled {
  /** Credits charged to the balance (for BYOK, the fee plus plugin charges). */
  cost: Nano;
  /** The list-price token cost, which a BYOK request pays its provider directly. */
  listCost: Nano;
  /**
   * Resolves once the charge is durable in the ledger, so that the answer's last byte may go out
   * (CONTRACT §8); or, when the ledger cannot write it within `ledger.durable_wait_ms`, once that
   * wait is over (the charge stays queued: see Ledger.awaitDurable), with true when it is durable
   * (nothing to charge is durable at once). Never rejects.
   */
  durable: Promise<boolean>;
}

/** What a settlement reports to. */
export interface SettlementHooks {
  /** Settling the holds failed (the charge itself stands). */
  onError(err: unknown): void;
  metrics: Metrics;
  now(): number;
}

/**
 * The one settlement of one request: whatever way it ends (success, upstream failure mid-stream,
 * client disconnect, shutdown), it is charged once and only once, and its holds are settled.
 */
export class Settlement {
  private result: Settled | undefined;

  constructor(
    private readonly ledger: Charges,
    private readonly base: SettlementBase,
    private readonly byokFeeFraction: number,
    private readonly ticket: Ticket,
    private readonly hooks: SettlementHooks,
  ) {}

  get settled(): boolean {
    return this.result !== undefined;
  }

  settle(input: SettleInput): Settled {
    if (this.result) return this.result;
    const listCost = costOf(input.usage, input.pricing);
    const cost = chargedCost(input.usage, input.pricing, listCost, input.extras, this.base.isByok ? this.byokFeeFraction : undefined);
    const charge: Charge = {
      id: this.base.id,
      accountId: this.base.accountId,
      keyHash: this.base.keyHash,
      model: this.base.model,
      provider: this.base.provider,
      tokensPrompt: input.usage.promptTokens,
      tokensCompletion: billedCompletionTokens(input.usage),
      totalCost: cost,
      byokUsage: this.base.isByok ? listCost : 0n,
      isByok: this.base.isByok,
      streamed: this.base.streamed,
      cancelled: input.cancelled,
      finishReason: input.finishReason,
      usageSource: input.usageSource,
      createdAt: this.base.startedAt,
      latencyMs: Math.max(0, input.endedAt - this.base.startedAt),
    };
    const { metrics, now } = this.hooks;
    const settledAt = now();
    const written = this.ledger.charge(charge);
    metrics.held(-this.ticket.held);
    metrics.charged(charge.model, charge.provider, cost, charge.tokensPrompt, charge.tokensCompletion);
    void written.then(() => metrics.chargeLag((now() - settledAt) / 1000));
    // Settled from here on, whatever the ticket's settlement reports: a second call answers this.
    this.result = { cost, listCost, durable: this.ledger.awaitDurable(written) };
    // The holds' pending charge is renewed until the charge is in the ledger's tables (after it is durable).
    this.settleTicket({ cost, byokUsage: charge.byokUsage, chargedAt: chargedAt(charge) }, this.ledger.recorded(charge.id));
    return this.result;
  }

  /** Ends a request that delivered nothing: no charge; its holds are released. */
  settleNothing(): void {
    if (this.result) return;
    this.result = { cost: 0n, listCost: 0n, durable: Promise.resolve(true) };
    this.hooks.metrics.held(-this.ticket.held);
    this.settleTicket({ cost: 0n, byokUsage: 0n, chargedAt: this.base.startedAt }, Promise.resolve());
  }

  /** The ticket's holds settled, whatever fails reported (never thrown: the charge itself stands). */
  private settleTicket(actual: ActualCost, recorded: Promise<void>): void {
    const { onError } = this.hooks;
    try {
      const settled = this.ticket.settle(actual, recorded, onError);
      if (isPromise(settled)) settled.catch(onError);
    } catch (err) {
      onError(err);
    }
  }
}
