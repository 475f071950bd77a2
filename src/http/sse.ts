import type { ServerResponse } from 'node:http';
import type { CancelSignal } from '../cancellation.js';
import { WRITTEN_THEN_STOP, type RelayReply, type SseText } from '../chat/chat-service.js';

/**
 * Writes a relayed stream as server-sent events, honouring backpressure: each item yielded (the events
 * of one upstream read) is one write, counted by the producer as delivered once written (RelayReply),
 * and the generator's return value (the closing events) goes out with the end of the response, in one
 * write. Stops (and so lets the producer settle) when the client
 * goes away, or when `signal` cancels the request while the client is not reading (past the request
 * deadline, or at shutdown): a client that stops reading without leaving is cut off then, so that its
 * request settles and is charged instead of waiting for as long as the connection lives.
 */
export async function writeSse(
  raw: ServerResponse,
  headers: Record<string, string>,
  items: AsyncGenerator<SseText, SseText | undefined, RelayReply>,
  signal: CancelSignal,
): Promise<void> {
  let closing: SseText | undefined;
  try {
    // The headers go out with the first events (the route starts the stream once output arrived).
    // Inside the try: a head that cannot be written still ends the producer (its upstream, its charge).
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...headers,
    });
    for (;;) {
      // Asking for the next item tells the producer the last one was written (it counts it then).
      const item = await items.next();
      // The client left while the item was made: it is not written, and so not counted (return()).
      if (raw.destroyed) break;
      if (item.done) {
        closing = item.value;
        break;
      }
      // An item is UTF-8 bytes held one character a byte (SseText): 'latin1' writes them as they are.
      if (!raw.write(item.value, 'latin1')) {
        await drainedOrClosed(raw, signal);
        // Not drained: the client is gone, or the request was cancelled while it was not reading. The
        // item was written all the same: the producer counts it, and reads nothing more.
        if (raw.destroyed || raw.writableNeedDrain) {
          raw.destroy();
          await items.next(WRITTEN_THEN_STOP);
          break;
        }
      }
    }
  } finally {
    await items.return(undefined);
    // A head that failed leaves the response to the caller (endFailedStream), not to an empty 200.
    if (!raw.destroyed && raw.headersSent) {
      if (closing) raw.end(closing, 'latin1');
      else raw.end();
    }
  }
}

/** Resolves when the socket can take more, is gone, or `signal` is cancelled; leaves no listener behind. */
function drainedOrClosed(raw: ServerResponse, signal: CancelSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      signal.off('abort', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
    signal.once('abort', done);
  });
}

/**
 * Ends a stream whose writing failed (the route had taken the response over, so nothing else will):
 * an error answer when no head went out yet, else the connection is cut (the client sees the stream
 * end without its closing events).
 */
export function endFailedStream(raw: ServerResponse, answer: { status: number; body: unknown }, requestId: string): void {
  if (raw.writableEnded || raw.destroyed) return;
  if (raw.headersSent) {
    raw.destroy();
    return;
  }
  try {
    raw.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId });
    raw.end(JSON.stringify(answer.body));
  } catch {
    raw.destroy();
  }
}
