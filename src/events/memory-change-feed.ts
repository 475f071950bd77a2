import type { Change, ChangeFeed, FeedListener } from './change-feed.js';
import { FeedListeners } from './feed-listeners.js';

/**
 * The change feed of a single process: a change reaches this process's listeners synchronously, and
 * there is no other process to miss it, so the feed is always live.
 */
export class MemoryChangeFeed implements ChangeFeed {
  private readonly listeners = new FeedListeners();
  readonly live = true;

  async publish(change: Change): Promise<void> {
    this.listeners.deliver(change);
  }

  subscribe(listener: FeedListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
