import type { Clock } from '../clock.js';
import type { CounterStore } from '../limits/counter-store.js';
import { platformRateLimited } from './rate-errors.js';

/**
 * The DDoS guard (spec, Limits / Rate limits 3): requests per client address per second, set far above
 * normal use, checked before anything costly (before the key is even looked up).
 */
export class DdosGuard {
  constructor(
    private readonly store: CounterStore,
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {}

  async check(ip: string): Promise<void> {
    const now = this.clock.now();
    const second = Math.floor(now / 1000) * 1000;
    const counter = { key: `ddos:${ip}:${second}`, limit: this.perSecond, resetAt: second + 1000 };
    const r = await this.store.hit([counter], now);
    if (!r.ok) {
      throw platformRateLimited({
        limit: 'ddos',
        max: this.perSecond,
        resetAt: counter.resetAt,
        now,
        message: `too many requests from this address: more than ${this.perSecond} a second dramatically exceeds reasonable use`,
        hint: 'Slow down: retry with exponential backoff, honouring Retry-After.',
      });
    }
  }
}
