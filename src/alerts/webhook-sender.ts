import { randomUUID } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../observability/logger.js';
import type { AlertEvent, AlertEventType, WebhookAdmin, WebhookStatus, WebhookTestResult } from './alerts.js';
import { signatureHeader } from './webhook-signature.js';
import { settledWithin } from '../settled-within.js';

export interface WebhookTarget {
  id: string;
  url: string;
  secret: string;
  events: readonly AlertEventType[];
}

export interface WebhookSenderOptions {
  webhooks: readonly WebhookTarget[];
  dispatcher: Dispatcher;
  clock: Clock;
  logger: Logger;
  /** One attempt's limit, on the clock (default 5 s). */
  timeoutMs?: number;
  /** Attempts per delivery, the first included (default 5). */
  maxAttempts?: number;
  /** The wait before the second attempt; it doubles for each next one, with jitter (default 4 s: ~1 min over 5 attempts). */
  baseDelayMs?: number;
  /** Deliveries pending per webhook past which the oldest is dropped (default 1,000). */
  maxPending?: number;
  /** Attempts sent at once per webhook (default 4). */
  concurrency?: number;
  /** [0, 1), for the jitter. */
  random?: () => number;
}

interface Delivery {
  event: AlertEvent;
  body: string;
  attempt: number;
  retry?: Timer;
  running: boolean;
  abort?: AbortController;
}

interface Target {
  hook: WebhookTarget;
  /** Every pending delivery, oldest first (waiting, running or waiting for a retry). */
  pending: Set<Delivery>;
  /** Due now, in order. */
  ready: Delivery[];
  running: number;
  delivered: number;
  failed: number;
  dropped: number;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  lastFailure: string | null;
}

type Outcome = { ok: true; status: number } | { ok: false; status: number | null; reason: string; retry: boolean };

/** The URL as shown to operators: no userinfo, no query (either may carry a credential). */
export function displayUrl(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  return u.toString();
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Delivers alert events to the configured webhooks: signed, with a timeout, retried with exponential
 * backoff and jitter on network errors, timeouts, 5xx and 429, a bounded queue per webhook (past it
 * the oldest delivery is dropped, with a warning). `send` only queues: nothing here is ever awaited
 * by a request.
 */
export class WebhookSender implements WebhookAdmin {
  private readonly targets: Target[];
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxPending: number;
  private readonly concurrency: number;
  private readonly random: () => number;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly options: WebhookSenderOptions) {
    this.targets = options.webhooks.map((hook) => ({
      hook,
      pending: new Set(),
      ready: [],
      running: 0,
      delivered: 0,
      failed: 0,
      dropped: 0,
      lastSuccessAt: null,
      lastFailureAt: null,
      lastFailure: null,
    }));
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.baseDelayMs = options.baseDelayMs ?? 4000;
    this.maxPending = options.maxPending ?? 1000;
    this.concurrency = options.concurrency ?? 4;
    this.random = options.random ?? Math.random;
  }

  /** Which events any webhook asked for. */
  wanted(type: AlertEventType): boolean {
    return this.targets.some((t) => t.hook.events.includes(type));
  }

  /** Queues the event for every webhook that asked for its type. */
  send(event: AlertEvent): void {
    if (this.closed) return;
    const body = JSON.stringify(event);
    for (const target of this.targets) {
      if (event.type !== 'test' && !target.hook.events.includes(event.type)) continue;
      const delivery: Delivery = { event, body, attempt: 0, running: false };
      target.pending.add(delivery);
      target.ready.push(delivery);
      this.dropPastBound(target);
      this.pump(target);
    }
  }

  list(): WebhookStatus[] {
    return this.targets.map((t) => ({
      id: t.hook.id,
      url: displayUrl(t.hook.url),
      events: t.hook.events,
      pending: t.pending.size,
      delivered: t.delivered,
      failed: t.failed,
      dropped: t.dropped,
      last_success_at: iso(t.lastSuccessAt),
      last_failure_at: iso(t.lastFailureAt),
      last_failure: t.lastFailure,
    }));
  }

  async test(id: string): Promise<WebhookTestResult | undefined> {
    const target = this.targets.find((t) => t.hook.id === id);
    if (!target) return undefined;
    const event: AlertEvent = {
      id: `evt_${randomUUID()}`,
      type: 'test',
      created_at: new Date(this.options.clock.now()).toISOString(),
      data: { webhook: id, message: 'a test event sent from the admin API' },
    };
    const outcome = await this.attempt(target, { event, body: JSON.stringify(event), attempt: 1, running: true });
    this.record(target, outcome);
    return outcome.ok
      ? { id, event_id: event.id, delivered: true, status: outcome.status, error: null }
      : { id, event_id: event.id, delivered: false, status: outcome.status, error: outcome.reason };
  }

  /** Resolves once no delivery is due now or running (retries waiting on the clock do not count). */
  idle(): Promise<void> {
    if (this.targets.every((t) => t.ready.length === 0 && t.running === 0)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking events, lets what is due now go out for at most `deadlineMs` (real time: shutdown
   * must end even while the clock stands still), then abandons the rest with a warning.
   */
  async close(deadlineMs = 2000): Promise<void> {
    this.closed = true;
    let retries = 0;
    for (const t of this.targets) {
      for (const d of t.pending) {
        if (d.retry) {
          d.retry.cancel();
          t.pending.delete(d);
          t.dropped++;
          retries++;
        }
      }
    }
    await settledWithin(this.idle(), deadlineMs, { unref: true });
    const left = this.targets.reduce((n, t) => n + t.pending.size, 0);
    for (const t of this.targets) {
      for (const d of t.pending) d.abort?.abort();
      t.ready = [];
      t.pending.clear();
    }
    if (left > 0 || retries > 0) {
      this.options.logger.warn({ unsent: left, retries_not_due: retries }, 'webhooks: deliveries still pending at shutdown were not sent');
    }
  }

  private dropPastBound(target: Target): void {
    while (target.pending.size > this.maxPending) {
      const oldest = [...target.pending].find((d) => !d.running);
      if (!oldest) return;
      oldest.retry?.cancel();
      target.pending.delete(oldest);
      const i = target.ready.indexOf(oldest);
      if (i >= 0) target.ready.splice(i, 1);
      target.dropped++;
      this.options.logger.warn(
        { webhook: target.hook.id, event: oldest.event.type, event_id: oldest.event.id, max_pending: this.maxPending },
        'webhooks: too many deliveries pending; the oldest was dropped',
      );
    }
  }

  private pump(target: Target): void {
    while (target.running < this.concurrency && target.ready.length > 0) {
      const delivery = target.ready.shift() as Delivery;
      delivery.running = true;
      delivery.attempt++;
      target.running++;
      void this.attempt(target, delivery).then((outcome) => this.settle(target, delivery, outcome));
    }
    this.notifyIdle();
  }

  private settle(target: Target, delivery: Delivery, outcome: Outcome): void {
    target.running--;
    delivery.running = false;
    delivery.abort = undefined;
    this.record(target, outcome);
    if (!outcome.ok && outcome.retry && delivery.attempt < this.maxAttempts && !this.closed) {
      const wait = this.baseDelayMs * 2 ** (delivery.attempt - 1);
      const delay = Math.round(wait / 2 + (wait / 2) * this.random());
      delivery.retry = this.options.clock.schedule(delay, () => {
        delivery.retry = undefined;
        if (!target.pending.has(delivery)) return;
        target.ready.push(delivery);
        this.pump(target);
      });
    } else {
      target.pending.delete(delivery);
      if (!outcome.ok) {
        target.failed++;
        this.options.logger.warn(
          { webhook: target.hook.id, event: delivery.event.type, event_id: delivery.event.id, attempts: delivery.attempt, reason: outcome.reason },
          'webhooks: delivery given up',
        );
      }
    }
    this.pump(target);
  }

  private record(target: Target, outcome: Outcome): void {
    const now = this.options.clock.now();
    if (outcome.ok) {
      target.delivered++;
      target.lastSuccessAt = now;
    } else {
      target.lastFailureAt = now;
      target.lastFailure = outcome.reason;
    }
  }

  /** One attempt; never rejects. */
  private async attempt(target: Target, delivery: Delivery): Promise<Outcome> {
    const abort = new AbortController();
    delivery.abort = abort;
    let timedOut = false;
    const timer = this.options.clock.schedule(this.timeoutMs, () => {
      timedOut = true;
      abort.abort();
    });
    try {
      const t = Math.floor(this.options.clock.now() / 1000);
      const res = await request(target.hook.url, {
        method: 'POST',
        dispatcher: this.options.dispatcher,
        signal: abort.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'tollgate-webhooks',
          'x-tollgate-event': delivery.event.type,
          'x-tollgate-event-id': delivery.event.id,
          'x-tollgate-signature': signatureHeader(target.hook.secret, t, delivery.body),
        },
        body: delivery.body,
      });
      await res.body.dump().catch(() => undefined);
      const status = res.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      return { ok: false, status, reason: `HTTP ${status}`, retry: status >= 500 || status === 429 || status === 408 };
    } catch (err) {
      const reason = timedOut ? `no answer within ${this.timeoutMs} ms` : `${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}`;
      return { ok: false, status: null, reason, retry: true };
    } finally {
      timer.cancel();
    }
  }

  private notifyIdle(): void {
    if (this.idleWaiters.length === 0 || !this.targets.every((t) => t.ready.length === 0 && t.running === 0)) return;
    this.idleWaiters.splice(0).forEach((w) => w());
  }
}
