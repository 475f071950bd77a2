import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import type { ChangeFeed, FeedEvent } from '../src/events/change-feed.js';
import { MemoryChangeFeed } from '../src/events/memory-change-feed.js';
import { RedisChangeFeed, type RedisChangeFeedOptions } from '../src/events/redis-change-feed.js';
import { privateRedisMissing, startPrivateRedis } from './helpers/private-redis.js';
import { redisTarget, redisUrl } from './helpers/redis.js';

/** Everything a feed told one listener, and a way to wait for an event without sleeping. */
function record(feed: ChangeFeed) {
  const events: FeedEvent[] = [];
  let waiters: Array<() => void> = [];
  feed.subscribe((e) => {
    events.push(e);
    const w = waiters;
    waiters = [];
    w.forEach((f) => f());
  });
  return {
    events,
    async until(match: (e: FeedEvent) => boolean): Promise<FeedEvent> {
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}

const isKey = (hash: string) => (e: FeedEvent) => e.kind === 'key' && e.hash === hash;
const keysOf = (events: FeedEvent[]) => events.flatMap((e) => (e.kind === 'key' ? [e.hash] : []));

// One suite for every feed (as the store suites run per store): what a single process relies on.
const feeds: Array<[string, () => Promise<{ feed: ChangeFeed; close(): Promise<void> }>]> = [
  ['memory', async () => ({ feed: new MemoryChangeFeed(), close: async () => undefined })],
];
if (redisUrl) {
  feeds.push([
    'redis',
    async () => {
      const t = await redisTarget();
      const subscriber = t.client.duplicate();
      const feed = new RedisChangeFeed(t.client, subscriber, { prefix: t.prefix });
      feed.start();
      await feed.untilLive();
      return {
        feed,
        async close() {
          await feed.close();
          subscriber.disconnect();
          await t.close();
        },
      };
    },
  ]);
}

for (const [name, make] of feeds) {
  describe(`change feed: ${name}`, () => {
    let cleanup: (() => Promise<void>) | undefined;
    const open = async () => {
      const made = await make();
      cleanup = made.close;
      return made.feed;
    };
    afterEach(async () => {
      await cleanup?.();
      cleanup = undefined;
    });

    it('is live, and tells this process of its own change before publish returns', async () => {
      const feed = await open();
      expect(feed.live).toBe(true);
      const heard: FeedEvent[] = [];
      feed.subscribe((e) => heard.push(e));
      const published = feed.publish({ kind: 'key', hash: 'h1' });
      expect(heard).toEqual([{ kind: 'key', hash: 'h1' }]);
      await published;
      await feed.publish({ kind: 'account', id: 'acct_1' });
      await feed.publish({ kind: 'byok', accountId: 'acct_1' });
      expect(heard).toEqual([
        { kind: 'key', hash: 'h1' },
        { kind: 'account', id: 'acct_1' },
        { kind: 'byok', accountId: 'acct_1' },
      ]);
    });

    it('stops telling a listener that unsubscribed, and one listener that throws does not keep a change from another', async () => {
      const feed = await open();
      const heard: string[] = [];
      feed.subscribe(() => {
        throw new Error('listener bug');
      });
      const stop = feed.subscribe((e) => heard.push(e.kind));
      await feed.publish({ kind: 'key', hash: 'a' });
      stop();
      await feed.publish({ kind: 'key', hash: 'b' });
      expect(heard).toEqual(['key']);
    });
  });
}

describe.skipIf(!redisUrl)('change feed: redis, between processes', () => {
  const closers: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  /** A feed as one gateway process would have it: its own two connections, on `prefix`. */
  async function processFeed(prefix: string, options: RedisChangeFeedOptions = {}) {
    const publisher = new Redis(redisUrl as string, { maxRetriesPerRequest: 1 });
    const subscriber = publisher.duplicate();
    const feed = new RedisChangeFeed(publisher, subscriber, { prefix, ...options });
    closers.push(async () => {
      await feed.close();
      subscriber.disconnect();
      publisher.disconnect();
    });
    const rec = record(feed);
    feed.start();
    await feed.untilLive();
    return { feed, rec, publisher, subscriber };
  }
  const newPrefix = () => `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:`;

  it('a change published by one process reaches the others, and its own listeners exactly once', async () => {
    const prefix = newPrefix();
    const a = await processFeed(prefix);
    const b = await processFeed(prefix);
    await a.feed.publish({ kind: 'key', hash: 'disabled-on-a' });
    expect(await b.rec.until(isKey('disabled-on-a'))).toEqual({ kind: 'key', hash: 'disabled-on-a' });
    // Redis delivers one channel's messages in order: once A hears B's reply, its own echo came back before it.
    await b.feed.publish({ kind: 'account', id: 'acct_from_b' });
    await a.rec.until((e) => e.kind === 'account');
    expect(a.rec.events).toEqual([
      { kind: 'key', hash: 'disabled-on-a' },
      { kind: 'account', id: 'acct_from_b' },
    ]);
    expect(b.rec.events).toEqual([
      { kind: 'key', hash: 'disabled-on-a' },
      { kind: 'account', id: 'acct_from_b' },
    ]);
  });

  it('feeds with another prefix hear nothing of it', async () => {
    const prefix = newPrefix();
    const a = await processFeed(prefix);
    const other = await processFeed(newPrefix());
    const b = await processFeed(prefix);
    await a.feed.publish({ kind: 'key', hash: 'only-here' });
    await b.rec.until(isKey('only-here'));
    // The other prefix's own change arrives after anything it could have heard from A.
    await other.feed.publish({ kind: 'key', hash: 'marker' });
    await other.rec.until(isKey('marker'));
    expect(keysOf(other.rec.events)).toEqual(['marker']);
  });

  it('reports a message it cannot read and carries on', async () => {
    const prefix = newPrefix();
    const errors: unknown[] = [];
    const b = await processFeed(prefix, { onError: (err) => errors.push(err) });
    const a = await processFeed(prefix);
    await a.publisher.publish(`${prefix}changes`, '{"not":"a change"}');
    await a.publisher.publish(`${prefix}changes`, 'not json');
    await a.feed.publish({ kind: 'key', hash: 'after' });
    await b.rec.until(isKey('after'));
    expect(errors).toHaveLength(2);
    expect(keysOf(b.rec.events)).toEqual(['after']);
  });

  it('after its subscription dropped: not live while it is down, then reset, then live, and changes arrive again', async () => {
    const prefix = newPrefix();
    const liveness: boolean[] = [];
    const b = await processFeed(prefix, { onLiveChange: (live) => liveness.push(live) });
    const a = await processFeed(prefix);
    expect(b.rec.events).toEqual([]); // the first subscription is no reset
    b.subscriber.disconnect(true); // drop the connection; ioredis connects again
    await b.rec.until((e) => e.kind === 'reset');
    expect(b.feed.live).toBe(true);
    expect(liveness).toEqual([true, false, true]);
    await a.feed.publish({ kind: 'key', hash: 'after-reconnect' });
    await b.rec.until(isKey('after-reconnect'));
    expect(b.rec.events).toEqual([{ kind: 'reset' }, { kind: 'key', hash: 'after-reconnect' }]);
  });
});

describe.skipIf(privateRedisMissing() !== undefined)('change feed: redis heartbeat (a private redis-server)', () => {
  it('a Redis that stops answering makes the feed not live within two beats; when it answers again: reset, then live', async () => {
    const server = await startPrivateRedis();
    const clock = new ManualClock();
    const publisher = new Redis(server.url, { maxRetriesPerRequest: 1 });
    const subscriber = publisher.duplicate();
    const feed = new RedisChangeFeed(publisher, subscriber, { prefix: 'hb:', heartbeat: { clock, intervalMs: 500 } });
    try {
      const rec = record(feed);
      feed.start();
      await feed.untilLive();
      clock.advance(500); // the first ping came back: still live
      expect(feed.live).toBe(true);
      server.pause();
      clock.advance(500); // a ping Redis will not answer while paused …
      clock.advance(500); // … has not come back a beat later
      expect(feed.live).toBe(false);
      expect(rec.events).toEqual([]);
      server.resume();
      await rec.until((e) => e.kind === 'reset');
      expect(feed.live).toBe(true);
    } finally {
      await feed.close();
      subscriber.disconnect();
      publisher.disconnect();
      await server.stop();
    }
  });
});
