import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/**
 * Redis for the suites that run per store: only when REDIS_URL points at one (CI always sets it).
 * Each use gets a key prefix of its own, and deletes its keys afterwards; nothing else is touched.
 */
export const redisUrl = process.env.REDIS_URL;

if (!redisUrl) {
  process.stderr.write('note: REDIS_URL is not set; store suites run in memory only (set it to a Redis URL to run them on Redis too)\n');
}

export interface RedisTarget {
  client: Redis;
  prefix: string;
  /** Deletes this target's keys and disconnects. */
  close(): Promise<void>;
}

export async function redisTarget(): Promise<RedisTarget> {
  if (!redisUrl) throw new Error('REDIS_URL is not set');
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  const prefix = `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  return {
    client,
    prefix,
    async close() {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        if (keys.length > 0) await client.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      client.disconnect();
    },
  };
}
