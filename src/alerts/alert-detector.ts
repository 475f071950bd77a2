import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { KeyRecord, Keys, LedgerUpdate, PeriodUsage } from '../ledger/ledger.js';
import { creditsToJson, type Nano } from '../ledger/money.js';
import { periodEnd } from '../ledger/periods.js';
import type { Logger } from '../observability/logger.js';
import type { AlertCrossings, AlertEvent, AlertEventType, Crossing } from './alerts.js';

/** A cooldown that just started (Cooldowns reports it). */
export interface CooldownStarted {
  provider: string;
  model: string;
  /** Which credential cooled down (a hash, never the key). */
  credential: string;
  untilMs: number;
  code: string | undefined;
}

export interface AlertDetectorOptions {
  keys: Pick<Keys, 'findKey'>;
  crossings: AlertCrossings;
  /** Queues an event for delivery (never awaited). */
  send(event: AlertEvent): void;
  /** Whether some webhook asked for this event type (no work is done for the others). */
  wanted(type: AlertEventType): boolean;
  clock: Clock;
  logger: Logger;
  /** balance_low below this. */
  balanceBelow: Nano;
  /** How long this process remembers a crossing it claimed or saw claimed, to skip claiming it again (default 60 s). */
  rememberMs?: number;
  /** Crossings remembered at most (default 10,000; the oldest go first). */
  maxRemembered?: number;
}

/**
 * Turns what each ledger commit reports (balances, key usage per period) and cooldowns into alert
 * events, once per crossing: a crossing is claimed in the shared store first, and only the process
 * that claims it sends the event. It reads nothing per request: the commit's own report, and the key
 * (limit, label) from the keys cache the request just authenticated with. Nothing here is awaited by
 * a request; failures are logged.
 *
 * Once per crossing:
 * - key_limit_80/100: per key, limit period (`d:2026-01-05`, `w:…`, `m:…`, `all`) and limit: a new
 *   period or a changed limit is a new crossing.
 * - balance_low: per account, until the balance is seen at or above 1.2 × the threshold (a credit
 *   entry reported by any process, or any commit seen by a process that knows of the crossing).
 * - provider_cooldown: per provider, model and credential, once per cooldown (until it ends).
 */
export class AlertDetector {
  private readonly remembered = new Map<string, number>();
  private readonly rememberMs: number;
  private readonly maxRemembered: number;
  private readonly rearmAbove: Nano;
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: AlertDetectorOptions) {
    this.rememberMs = options.rememberMs ?? 60_000;
    this.maxRemembered = options.maxRemembered ?? 10_000;
    this.rearmAbove = (options.balanceBelow * 6n) / 5n;
  }

  /** What a ledger transaction reported (onCommitted); returns at once. */
  committed(updates: readonly LedgerUpdate[]): void {
    for (const u of updates) {
      if (u.account) this.checkBalance(u.accountId, u.account.balance, u.committed === undefined);
      if (u.keys && (this.options.wanted('key_limit_80') || this.options.wanted('key_limit_100'))) {
        for (const k of u.keys) this.track(this.checkKey(u.accountId, k.hash, k.periods));
      }
    }
  }

  /**
   * An account was changed through some process (the change feed): a top-up there may have re-armed
   * its balance_low in the ledger, so the crossing this process remembers is asked of the ledger again
   * at the next fall below, not skipped for the rest of its memory.
   */
  accountChanged(accountId: string): void {
    this.forget(`account:${accountId}`, 'balance_low');
  }

  /** Changes may have been missed (the feed came back): every remembered crossing is asked of the ledger again. */
  forgetAll(): void {
    this.remembered.clear();
  }

  /** A cooldown started (Cooldowns' listener); returns at once. */
  cooldown(c: CooldownStarted): void {
    if (!this.options.wanted('provider_cooldown')) return;
    const crossing: Crossing = { subject: `cooldown:${c.provider}/${c.model}/${c.credential}`, event: 'provider_cooldown', period: '' };
    const data = { provider: c.provider, model: c.model, until: new Date(c.untilMs).toISOString(), code: c.code ?? null };
    this.track(this.claimThenSend(crossing, c.untilMs, data));
  }

  /** Resolves once the checks started so far have claimed and queued their events. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private checkBalance(accountId: string, balance: Nano, creditEntry: boolean): void {
    if (!this.options.wanted('balance_low')) return;
    const subject = `account:${accountId}`;
    if (balance < this.options.balanceBelow) {
      const data = { account: accountId, balance: creditsToJson(balance), threshold: creditsToJson(this.options.balanceBelow) };
      this.track(this.claimThenSend({ subject, event: 'balance_low', period: '' }, null, data));
    } else if (balance >= this.rearmAbove && (creditEntry || this.knows(subject, 'balance_low'))) {
      // Clearly above again: the next fall below alerts again. A charge never raises a balance, so
      // only credit entries (and processes that saw the crossing) need to look.
      this.forget(subject, 'balance_low');
      this.track(this.options.crossings.rearm(subject, 'balance_low').catch((err: unknown) => this.failed(err, 'balance_low')));
    }
  }

  private async checkKey(accountId: string, hash: string, periods: readonly PeriodUsage[]): Promise<void> {
    let key: KeyRecord | undefined;
    try {
      key = await this.options.keys.findKey(hash);
    } catch (err) {
      this.failed(err, 'key_limit');
      return;
    }
    if (!key || key.limit === null) return;
    const prefix = key.limitReset ? key.limitReset[0] + ':' : undefined;
    // The newest period of the key's kind the commit wrote (a commit across midnight writes two).
    const row = periods.filter((p) => (prefix ? p.period.startsWith(prefix) : p.period === 'all')).sort((a, b) => (a.period < b.period ? 1 : -1))[0];
    if (!row) return;
    const usage = row.usage + (key.includeByokInLimit ? row.byokUsage : 0n);
    if (usage <= 0n) return;
    const resetsAt = key.limitReset ? new Date(periodEnd(key.limitReset, Date.parse(row.period.slice(2)))).toISOString() : null;
    for (const [pct, event] of [
      [80n, 'key_limit_80'],
      [100n, 'key_limit_100'],
    ] as const) {
      if (!this.options.wanted(event) || usage * 100n < key.limit * pct) continue;
      const data = {
        key_hash: key.hash,
        key_label: key.label,
        key_name: key.name,
        account: accountId,
        limit: creditsToJson(key.limit),
        usage: creditsToJson(usage),
        limit_reset: key.limitReset,
        period: row.period,
        resets_at: resetsAt,
      };
      await this.claimThenSend({ subject: `key:${key.hash}`, event, period: `${row.period}@${key.limit}` }, null, data);
    }
  }

  private async claimThenSend(crossing: Crossing, untilMs: number | null, data: Record<string, unknown>): Promise<void> {
    const id = memoKey(crossing.subject, crossing.event, crossing.period);
    // A crossing that stands until re-armed, already claimed here or seen claimed: nothing to ask.
    if (untilMs === null && this.isRemembered(id)) return;
    if (untilMs === null) this.remember(id);
    const at = this.options.clock.now();
    try {
      if (!(await this.options.crossings.claim(crossing, at, untilMs))) return;
    } catch (err) {
      this.remembered.delete(id);
      this.failed(err, crossing.event);
      return;
    }
    this.options.send({ id: `evt_${randomUUID()}`, type: crossing.event, created_at: new Date(at).toISOString(), data });
  }

  private knows(subject: string, event: AlertEventType): boolean {
    return this.isRemembered(memoKey(subject, event, ''));
  }

  private forget(subject: string, event: AlertEventType): void {
    this.remembered.delete(memoKey(subject, event, ''));
  }

  private isRemembered(id: string): boolean {
    const until = this.remembered.get(id);
    if (until === undefined) return false;
    if (until > this.options.clock.now()) return true;
    this.remembered.delete(id);
    return false;
  }

  private remember(id: string): void {
    this.remembered.delete(id);
    this.remembered.set(id, this.options.clock.now() + this.rememberMs);
    if (this.remembered.size > this.maxRemembered) this.remembered.delete(this.remembered.keys().next().value as string);
  }

  private track(work: Promise<void>): void {
    const p = work.catch((err: unknown) => this.failed(err, 'alert')).finally(() => this.running.delete(p));
    this.running.add(p);
  }

  private failed(err: unknown, what: string): void {
    this.options.logger.warn(
      { err: { message: (err as Error)?.message }, alert: what },
      'alerts: a crossing could not be checked or recorded; it is checked again on the next commit',
    );
  }
}

const memoKey = (subject: string, event: string, period: string) => `${subject}\u0000${event}\u0000${period}`;
