import type { Clock } from '../clock.js';
import type { CounterStore } from '../limits/counter-store.js';
import { platformRateLimited } from './rate-errors.js';
import type { Awaitable } from '../awaitable.js';

/** How long an address's requests are counted here before the count goes to the store (default). */
const FLUSH_EVERY_MS = 20;

/** One address's requests in the current second. */
interface Count {
  /** What every process had counted when the store last answered. */
  seen: number;
  /** This process's requests on their way to the store. */
  sending: number;
  /** This process's requests not sent yet. */
  unsent: number;
}

interface Window {
  /** When the second starts (ms). */
  start: number;
  counts: Map<string, Count>;
}

export interface DdosGuardOptions {
  /** How long requests are counted here before they are added to the store's count (ms). */
  flushEveryMs?: number;
}

/**
 * The DDoS guard (spec, Limits / Rate limits 3): requests per client address per second, set far above
 * normal use, checked before anything costly (before the key is even looked up).
 *
 * A guard against requests that "dramatically exceed reasonable usage" is approximate by nature, so it
 * costs no round trip a request: each process counts an address's requests itself and adds them to
 * the shared count (the store) every `flushEveryMs`, in one call for every address, learning in the
 * answer what all processes counted. In one process the count is exact; across processes an address
 * can pass the limit by what the others counted in the last `flushEveryMs`. When the store does not
 * answer, every request goes to it, one round trip each (and so fails closed, 503
 * limits_unavailable), until it answers again.
 */
export class DdosGuard {
  private window: Window = { start: -1, counts: new Map() };
  private timer: NodeJS.Timeout | undefined;
  /** The last flush failed: the store may be down. */
  private storeFailing = false;
  private readonly flushEveryMs: number;

  constructor(
    private readonly store: CounterStore,
    private readonly perSecond: number,
    private readonly clock: Clock,
    options: DdosGuardOptions = {},
  ) {
    this.flushEveryMs = options.flushEveryMs ?? FLUSH_EVERY_MS;
  }

  /**
   * Counts a request from `ip`: at once, or throws the 429, when this process's counts decide (a
   * promise a request would cost every request); a promise while the store is failing and each
   * request is counted there.
   */
  check(ip: string): Awaitable<void> {
    const now = this.clock.now();
    const start = Math.floor(now / 1000) * 1000;
    if (this.storeFailing) return this.checkAtStore(ip, now, start);
    if (this.window.start !== start) this.window = { start, counts: new Map() };
    let c = this.window.counts.get(ip);
    if (!c) this.window.counts.set(ip, (c = { seen: 0, sending: 0, unsent: 0 }));
    if (c.seen + c.sending + c.unsent >= this.perSecond) throw this.refusal(start, now);
    c.unsent += 1;
    this.timer ??= setTimeout(() => void this.flush(), this.flushEveryMs).unref();
  }

  /** Adds this process's counts to the store's, and learns what every process counted. */
  async flush(): Promise<void> {
    this.timer = undefined;
    const w = this.window;
    const sent: Array<[string, Count, number]> = [];
    for (const [ip, c] of w.counts) {
      if (c.unsent === 0) continue;
      sent.push([ip, c, c.unsent]);
      c.sending += c.unsent;
      c.unsent = 0;
    }
    if (sent.length === 0) return;
    const resetAt = w.start + 1000;
    try {
      const counts = await this.store.add(
        sent.map(([ip, , n]) => ({ key: counterKey(ip, w.start), n, resetAt })),
        this.clock.now(),
      );
      sent.forEach(([, c, n], i) => {
        c.sending -= n;
        c.seen = Math.max(c.seen, counts[i] ?? 0);
      });
      this.storeFailing = false;
    } catch {
      // Counted here still: they go to the store with the next flush, if the second has not passed.
      for (const [, c, n] of sent) {
        c.sending -= n;
        c.unsent += n;
      }
      this.storeFailing = true;
    }
  }

  /** One round trip: count the request at the store, or fail closed when it does not answer. */
  private async checkAtStore(ip: string, now: number, start: number): Promise<void> {
    const r = await this.store.hit([{ key: counterKey(ip, start), limit: this.perSecond, resetAt: start + 1000 }], now);
    this.storeFailing = false;
    if (!r.ok) throw this.refusal(start, now);
  }

  private refusal(start: number, now: number) {
    return platformRateLimited({
      limit: 'ddos',
      max: this.perSecond,
      resetAt: start + 1000,
      now,
      message: `too many requests from this address: more than ${this.perSecond} a second dramatically exceeds reasonable use`,
      hint: 'Slow down: retry with exponential backoff, honouring Retry-After.',
    });
  }

  /** Stops the flush timer (what was counted since the last flush is not sent). */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The counter of an address in one second; the second is the hash tag, so that one flush's counters share a Redis Cluster slot. */
const counterKey = (ip: string, start: number) => `ddos:{${start}}:${ip}`;
