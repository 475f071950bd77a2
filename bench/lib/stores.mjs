// The postgres-redis deployment's stores: a PostgreSQL database and a Redis key prefix of the run's
// own, dropped when the run ends. pg and ioredis are the gateway's own dependencies.
import { randomBytes } from 'node:crypto';

export async function sharedStores({ databaseUrl, redisUrl }, tag) {
  const { default: pg } = await import('pg');
  const { Redis } = await import('ioredis');
  const name = `tollgate_bench_${tag.replace(/[^a-z0-9_]/gi, '_')}_${randomBytes(4).toString('hex')}`.toLowerCase();
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  const prefix = `tollgate-bench:${randomBytes(4).toString('hex')}:`;
  return {
    databaseUrl: url.toString(),
    redisUrl,
    prefix,
    async drop() {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      const r = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await r.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      r.disconnect();
    },
  };
}

/** Why the postgres-redis deployment cannot run here (undefined: both servers answer). */
export async function sharedStoresUnreachable({ databaseUrl, redisUrl }) {
  try {
    const { default: pg } = await import('pg');
    const { Redis } = await import('ioredis');
    const c = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 2000 });
    await c.connect();
    await c.end();
    const r = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => null });
    await r.connect();
    await r.ping();
    r.disconnect();
    return undefined;
  } catch (err) {
    return err.message;
  }
}
