import type { FeedEvent, FeedListener } from './change-feed.js';

/** A feed's listeners: each hears every event, and one that throws does not keep it from the others. */
export class FeedListeners {
  private readonly listeners = new Set<FeedListener>();

  constructor(private readonly onError: (err: unknown) => void = () => undefined) {}

  add(listener: FeedListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  deliver(event: FeedEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
