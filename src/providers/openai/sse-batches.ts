import type { StreamBatch } from '../provider.js';
import type { UpstreamBody } from './upstream-response.js';
import { createParser } from 'eventsource-parser';
import { Utf8Reads, type Utf8Bytes } from '../../utf8-bytes.js';

/** A byte-order mark's UTF-8 bytes. */
const UTF8_BOM = '\xef\xbb\xbf';

const CR = 13;
const LF = 10;

/** Reads queued ahead of the consumer (a slow client) before the upstream body is paused. */
const READ_AHEAD = 256;

export interface SseBatchesOptions<T> {
  /** One event's data (its UTF-8 bytes) as the consumer wants it; it may throw to end the stream with that error. */
  toEvent(data: Utf8Bytes): T;
  /** What the consumer is thrown when the body fails (a read error, a timeout, an abort). */
  toError(err: unknown): unknown;
  /** Called once when the stream is over, however it ended. */
  onEnded(): void;
}

/**
 * An upstream's server-sent events as batches: each batch is what was read since the consumer last asked,
 * marked `last` when the stream reached its end with it (no batch follows; one that an error follows
 * is not). It ends at `data: [DONE]` without waiting for the body to end: the rest of the body drains
 * by itself, so that the connection is kept for the next request instead of being torn down. A consumer
 * that stops early (`return`) destroys the body.
 */
export function sseBatches<T>(body: UpstreamBody, options: SseBatchesOptions<T>): AsyncIterableIterator<StreamBatch<T>> {
  // The events read since the consumer last took a batch, and in how many reads they came.
  let batch: T[] = [];
  let readsAhead = 0;
  let finished = false;
  let failure: unknown;
  let failed = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const finish = () => {
    if (finished) return;
    finished = true;
    options.onEnded();
  };

  const parser = createParser({
    onEvent: (e) => {
      if (finished) return;
      // The parser was fed bytes (Utf8Bytes), so its data is bytes. Trimming them is safe: what it
      // removes at either end is ASCII space, or a byte of a character no JSON text ends or starts with.
      const data = e.data.trim() as Utf8Bytes;
      if (data === '[DONE]') return finish();
      if (!data) return;
      try {
        batch.push(options.toEvent(data));
      } catch (err) {
        // The events before it in this read still go out; then the error.
        failure = err;
        failed = true;
        finish();
        body.destroy();
      }
    },
  });
  // The reads are fed to the parser as their UTF-8 bytes, not decoded (utf8-bytes.ts): the events'
  // structure is ASCII, and their bytes are relayed as they came, behind the gateway's own fields.
  const reads = new Utf8Reads();
  let started = false;
  // A read that ends in CR: that CR ends its line whatever comes next (a lone CR is a line ending, and
  // so is a CR LF), but the parser holds it back until it sees what follows, and an upstream that ends
  // its lines with CR alone and keeps the body open after `data: [DONE]` would have the stream wait
  // for the body's idle timeout. So the read is fed with an LF after it (CR LF: the line ending it is),
  // and an LF that opens the next read, the other half of a CR LF split between reads, is dropped.
  let lfGiven = false;
  const onData = (buf: Buffer) => {
    // Past [DONE]: whatever is left of the body is read and dropped.
    if (finished) return;
    let text = reads.read(buf);
    if (!started && text.length > 0) {
      started = true;
      // A byte-order mark opening the stream is no part of it (as TextDecoder would drop it).
      if (text.startsWith(UTF8_BOM)) text = text.slice(UTF8_BOM.length) as Utf8Bytes;
    }
    if (lfGiven && text.length > 0) {
      lfGiven = false;
      if (text.charCodeAt(0) === LF) text = text.slice(1) as Utf8Bytes;
    }
    if (text.charCodeAt(text.length - 1) === CR) {
      text = (text + '\n') as Utf8Bytes;
      lfGiven = true;
    }
    const before = batch.length;
    parser.feed(text);
    if (batch.length > before) {
      if (++readsAhead >= READ_AHEAD) body.pause();
      notify();
    }
    if (finished) {
      if (body.paused) body.resume();
      notify();
    }
  };
  body.read({
    data: onData,
    end: () => {
      // The body's end ends the last event, as the blank line it may lack would (a read that ended in
      // CR was fed with its line ending already: onData).
      if (!finished) parser.feed('\n');
      finish();
      notify();
    },
    error: (err) => {
      if (!finished) {
        failure = options.toError(err);
        failed = true;
        finish();
      }
      notify();
    },
  });

  const iterator: AsyncIterableIterator<StreamBatch<T>> = {
    async next(): Promise<IteratorResult<StreamBatch<T>>> {
      for (;;) {
        if (batch.length > 0) {
          // Everything read since the consumer last asked goes as one batch (an upstream read often
          // brings many chunks of the chunked encoding, each its own 'data' event).
          const events = batch;
          batch = [];
          readsAhead = 0;
          // Resuming may hand over what waited meanwhile, its end included, before this returns: this
          // batch is the last only when nothing came in behind it.
          if (body.paused && !finished) body.resume();
          return { done: false, value: { events, last: finished && !failed && batch.length === 0 } };
        }
        if (failed) {
          failed = false;
          throw failure;
        }
        if (finished) return { done: true, value: undefined };
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    async return(): Promise<IteratorResult<StreamBatch<T>>> {
      if (!finished) {
        finish();
        body.destroy();
      }
      batch = [];
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
