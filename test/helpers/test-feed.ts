import type { Change, ChangeFeed, FeedEvent, FeedListener } from '../../src/events/change-feed.js';

/**
 * A change feed for unit tests: `publish` tells the listeners at once and records the change;
 * `fromElsewhere` plays a change (or a reset) arriving from another process; `live` is set by the test.
 */
export class TestFeed implements ChangeFeed {
  live = true;
  readonly published: Change[] = [];
  private readonly listeners = new Set<FeedListener>();

  async publish(change: Change): Promise<void> {
    this.published.push(change);
    this.fromElsewhere(change);
  }

  fromElsewhere(event: FeedEvent): void {
    for (const l of [...this.listeners]) l(event);
  }

  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listening(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

/** A promise and its resolver, to hold a read open while a test changes things. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve: (v: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
