import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Clock, Timer } from '../clock.js';
import type { Change, ChangeFeed, FeedListener } from './change-feed.js';
import { FeedListeners } from './feed-listeners.js';

const changeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('key'), hash: z.string().min(1) }),
  z.object({ kind: z.literal('account'), id: z.string().min(1) }),
  z.object({ kind: z.literal('byok'), accountId: z.string().min(1) }),
]);

/** A message on the channel: a change (`c`) or a heartbeat ping (`p`), from the feed named `o`. */
const messageSchema = z.union([z.object({ o: z.string(), c: changeSchema }), z.object({ o: z.string(), p: z.number().int() })]);

export interface RedisChangeFeedOptions {
  /** Prepended to the channel's name (`<prefix>changes`), as to every key, so gateways (or tests) can share one Redis. */
  prefix?: string;
  /**
   * A change that could not be sent to the other processes, or a message that could not be read. (A
   * failed subscription or ping is not reported here: it shows as `live` turning false.)
   */
  onError?: (err: unknown) => void;
  /** Told whenever `live` changes. */
  onLiveChange?: (live: boolean) => void;
  /**
   * Every `intervalMs` on `clock`, the feed sends itself a ping on the channel; when the previous one
   * has not come back by then, the feed is not live (a connection that died without closing, a Redis
   * that stopped answering). Without it, only a closed connection makes the feed not live.
   */
  heartbeat?: { clock: Clock; intervalMs: number };
}

/**
 * The change feed over Redis pub/sub, for many processes on one Redis. Both connections come in from
 * main.ts: `publisher` (any client) and `subscriber`, a connection of its own (a connection that
 * subscribes can send nothing else). A change reaches this process's listeners at once, in
 * `publish`, and the others' through the channel; a process ignores its own changes coming back.
 *
 * Pub/sub delivers at most once: what is published while a subscriber's connection is down is lost
 * to it. So the feed is live only from the moment a ping it sent after (re)subscribing came back
 * through the subscription, and every time it becomes live again after that first time it tells its
 * listeners `reset` (drop everything: changes may have been missed meanwhile).
 */
export class RedisChangeFeed implements ChangeFeed {
  readonly channel: string;
  /** Tells this feed's own messages from other processes'. */
  private readonly origin = randomBytes(8).toString('hex');
  private readonly listeners: FeedListeners;
  private isLive = false;
  private wasLive = false;
  /** Pings sent, and the last of this feed's pings heard back. */
  private pings = 0;
  private heard = 0;
  /** Pings sent up to the last heartbeat: by the next one, the last of them must have come back. */
  private due = 0;
  /** Pings sent before the subscriber's connection last closed: hearing one proves nothing about the new one. */
  private pingsBeforeClose = 0;
  private started = false;
  private closed = false;
  private timer: Timer | undefined;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly options: RedisChangeFeedOptions = {},
  ) {
    this.channel = `${options.prefix ?? 'tollgate:'}changes`;
    this.listeners = new FeedListeners((err) => this.report(err));
  }

  get live(): boolean {
    return this.isLive;
  }

  /** Subscribes and starts the heartbeat; the feed turns live once its first ping comes back (`untilLive`). */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.subscriber.on('message', this.onMessage);
    this.subscriber.on('close', this.onClose);
    this.subscriber.on('ready', this.onReady);
    // A connection not ready yet joins when it is ('ready'); a lazy one is told to connect.
    if (this.subscriber.status === 'ready') void this.join();
    else if (this.subscriber.status === 'wait') this.subscriber.connect().catch(() => undefined);
    this.scheduleBeat();
  }

  /** Resolves once the feed is live. */
  untilLive(): Promise<void> {
    if (this.isLive) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async publish(change: Change): Promise<void> {
    this.listeners.deliver(change);
    try {
      await this.publisher.publish(this.channel, JSON.stringify({ o: this.origin, c: change }));
    } catch (err) {
      this.report(err);
    }
  }

  subscribe(listener: FeedListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    this.subscriber.off('message', this.onMessage);
    this.subscriber.off('close', this.onClose);
    this.subscriber.off('ready', this.onReady);
    this.isLive = false; // closing is no outage: nobody is told
    this.listeners.clear();
    this.waiters = [];
    if (this.subscriber.status === 'ready') await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }

  /** (Re)subscribes, then pings: the ping coming back proves the subscription works on this connection. */
  private async join(): Promise<void> {
    if (this.closed) return;
    try {
      // SUBSCRIBE to a channel already subscribed is harmless: joining twice costs nothing.
      await this.subscriber.subscribe(this.channel);
      await this.ping();
    } catch {
      // Not live until a ping comes back; the next 'ready' or heartbeat joins again.
    }
  }

  private async ping(): Promise<void> {
    this.pings += 1;
    await this.publisher.publish(this.channel, JSON.stringify({ o: this.origin, p: this.pings }));
  }

  private scheduleBeat(): void {
    const hb = this.options.heartbeat;
    if (!hb || this.closed) return;
    this.timer = hb.clock.schedule(hb.intervalMs, () => {
      this.timer = undefined;
      if (this.closed) return;
      // The pings sent by the last beat have had a whole interval to come back: if they have not,
      // changes may not be arriving either.
      if (this.heard < this.due) this.setLive(false);
      if (this.isLive) this.ping().catch(() => undefined);
      else void this.join();
      this.due = this.pings;
      this.scheduleBeat();
    });
  }

  private readonly onReady = (): void => {
    void this.join();
  };

  private readonly onClose = (): void => {
    this.pingsBeforeClose = this.pings;
    this.setLive(false);
  };

  private readonly onMessage = (channel: string, text: string): void => {
    if (channel !== this.channel) return;
    let parsed: z.infer<typeof messageSchema>;
    try {
      parsed = messageSchema.parse(JSON.parse(text));
    } catch (err) {
      this.report(new Error(`change feed: a message on ${this.channel} could not be read`, { cause: err }));
      return;
    }
    if (parsed.o === this.origin) {
      // This feed's own change came back (its listeners heard it in `publish`), or its own ping.
      if ('p' in parsed && parsed.p > this.pingsBeforeClose) {
        this.heard = Math.max(this.heard, parsed.p);
        this.setLive(true);
      }
      return;
    }
    if ('c' in parsed) this.listeners.deliver(parsed.c);
  };

  private setLive(live: boolean): void {
    if (live === this.isLive || (live && this.closed)) return;
    this.isLive = live;
    if (live) {
      // Live again after a gap: whatever was published meanwhile may be lost. Listeners drop it all.
      if (this.wasLive) this.listeners.deliver({ kind: 'reset' });
      this.wasLive = true;
      const waiters = this.waiters;
      this.waiters = [];
      for (const resolve of waiters) resolve();
    }
    this.options.onLiveChange?.(live);
  }

  private report(err: unknown): void {
    this.options.onError?.(err);
  }
}
