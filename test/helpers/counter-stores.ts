import type { CounterStore } from '../../src/limits/counter-store.js';
import { MemoryCounterStore } from '../../src/limits/memory-counter-store.js';
import { RedisCounterStore } from '../../src/limits/redis-counter-store.js';
import { redisTarget, redisUrl } from './redis.js';

/** Every counter store implementation a suite runs over: in memory always, Redis when REDIS_URL is set. */
export const counterStores: Array<[string, () => Promise<{ store: CounterStore; close(): Promise<void> }>]> = [
  ['memory', async () => ({ store: new MemoryCounterStore(), close: async () => undefined })],
];
if (redisUrl) {
  counterStores.push([
    'redis',
    async () => {
      const t = await redisTarget();
      return { store: new RedisCounterStore(t.client, { prefix: t.prefix }), close: () => t.close() };
    },
  ]);
}
