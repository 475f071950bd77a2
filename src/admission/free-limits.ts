import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Account } from '../ledger/ledger.js';
import { creditsFromJson } from '../ledger/money.js';
import type { Counter, CounterStore } from '../limits/counter-store.js';
import type { CatalogModel } from '../routing/catalog.js';
import type { GatewayError } from '../errors.js';
import { platformRateLimited } from './rate-errors.js';

const MINUTE = 60_000;
type Kind = 'minute' | 'day' | 'capacity';

/** The free-model daily ceiling of the account's tier: the higher one from one credit below the threshold. */
export function freeDailyLimit(config: Config, account: Account): number {
  const f = config.limits.free_models;
  return account.totalPurchased >= creditsFromJson(f.tier_threshold) - creditsFromJson(1) ? f.per_day_high : f.per_day_low;
}

/** Spec: is_free_tier is false when the account purchased fewer all-time credits than the threshold. */
export function isFreeTier(config: Config, account: Account): boolean {
  return account.totalPurchased >= creditsFromJson(config.limits.free_models.free_tier_threshold);
}

function nextUtcMidnight(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}

// An account's counters carry its id as a hash tag: one Redis Cluster slot, like its holds.
const dayKey = (accountId: string, now: number) => `free:day:{${accountId}}:${Math.floor(now / 86_400_000)}`;

/**
 * The free-model limits (spec, Limits / Rate limits): per account and model per minute, per account
 * across all free models per UTC day (the ceiling chosen by purchased credits), and an optional
 * platform-wide capacity per model per minute. A request counts when it is about to be sent to a free
 * model (whatever the upstream then answers); refused requests do not count.
 */
export class FreeModelLimits {
  constructor(
    private readonly store: CounterStore,
    private readonly config: Config,
    private readonly clock: Clock,
  ) {}

  /** Free-model requests the account made this UTC day. */
  async usedToday(accountId: string): Promise<number> {
    const now = this.clock.now();
    const [used] = await this.store.peek([dayKey(accountId, now)], now);
    return used ?? 0;
  }

  /** The counters a request to `model` moves: the model's minute, the account's day (once per request), capacity. */
  private counters(account: Account, model: CatalogModel, withDay: boolean, now: number): Array<{ counter: Counter; kind: Kind }> {
    const f = this.config.limits.free_models;
    const minuteStart = Math.floor(now / MINUTE) * MINUTE;
    const out: Array<{ counter: Counter; kind: Kind }> = [
      {
        kind: 'minute',
        counter: { key: `free:min:{${account.id}}:${model.id}:${minuteStart}`, limit: model.config.per_minute ?? f.per_minute, resetAt: minuteStart + MINUTE },
      },
    ];
    if (withDay)
      out.push({ kind: 'day', counter: { key: dayKey(account.id, now), limit: freeDailyLimit(this.config, account), resetAt: nextUtcMidnight(now) } });
    const capacity = model.config.capacity_per_minute;
    if (capacity) out.push({ kind: 'capacity', counter: { key: `cap:${model.id}:${minuteStart}`, limit: capacity, resetAt: minuteStart + MINUTE } });
    return out;
  }

  private refusal(model: CatalogModel, counter: Counter, kind: Kind, now: number): GatewayError {
    const f = this.config.limits.free_models;
    const seconds = Math.max(1, Math.ceil((counter.resetAt - now) / 1000));
    const paid = model.id.slice(0, -f.suffix.length);
    if (kind === 'minute') {
      return platformRateLimited({
        limit: 'free-models-per-minute',
        max: counter.limit,
        resetAt: counter.resetAt,
        now,
        message: `free-model requests are limited to ${counter.limit} per minute for each account and model (${model.id}); this account reached it`,
        hint: `Wait ${seconds} s (until X-RateLimit-Reset) and retry with backoff; the paid variant ${paid} has no platform request cap.`,
      });
    }
    if (kind === 'day') {
      const higher = counter.limit < f.per_day_high;
      return platformRateLimited({
        limit: 'free-models-per-day',
        max: counter.limit,
        resetAt: counter.resetAt,
        now,
        message: `free-model requests are limited to ${counter.limit} per UTC day for this account, all free models together; this account reached it`,
        hint:
          `Retrying today does not help: the daily cap resets at ${new Date(counter.resetAt).toISOString()}. ` +
          (higher ? `Accounts that purchased at least ${f.tier_threshold} credits get ${f.per_day_high} a day; ` : '') +
          `the paid variant ${paid} has no platform request cap.`,
      });
    }
    return platformRateLimited({
      limit: 'model-capacity',
      max: counter.limit,
      resetAt: counter.resetAt,
      now,
      message: `${model.id} is at its platform-wide capacity of ${counter.limit} requests per minute, all accounts together`,
      hint: `Wait ${seconds} s and retry with backoff, or use another model.`,
    });
  }

  /** Refuses (429) when a request to `model` would be over a limit; counts nothing. */
  async check(account: Account, model: CatalogModel): Promise<void> {
    const now = this.clock.now();
    const all = this.counters(account, model, true, now);
    const counts = await this.store.peek(
      all.map((c) => c.counter.key),
      now,
    );
    const over = blocking(all, counts);
    if (over) throw this.refusal(model, over.counter, over.kind, now);
  }

  /**
   * Counts a request about to be sent to `model` against every limit at once (the account's day only
   * for the first free model the request tries); refuses (429) when one is full.
   */
  async count(account: Account, model: CatalogModel, withDay: boolean): Promise<void> {
    const now = this.clock.now();
    const all = this.counters(account, model, withDay, now);
    const r = await this.store.hit(
      all.map((c) => c.counter),
      now,
    );
    if (!r.ok) {
      // The refusal names the full limit that blocks longest (read again: the store names the first it
      // found full), so that a client that waits out its Retry-After is not refused by another.
      const counts = await this.store.peek(
        all.map((c) => c.counter.key),
        now,
      );
      const over = blocking(all, counts) ?? (all[r.failed] as (typeof all)[number]);
      throw this.refusal(model, over.counter, over.kind, now);
    }
  }
}

/**
 * Of the limits `all` whose `counts` are full, the one that blocks longest (resets last): the limit a
 * refusal describes (spec: the headers describe "the limit hit", and Retry-After must be worth
 * honouring). Undefined when none is full.
 */
function blocking<T extends { counter: Counter }>(all: readonly T[], counts: readonly number[]): T | undefined {
  let over: T | undefined;
  for (let i = 0; i < all.length; i++) {
    const c = all[i] as T;
    if ((counts[i] ?? 0) >= c.counter.limit && (over === undefined || c.counter.resetAt > over.counter.resetAt)) over = c;
  }
  return over;
}
