import type { ServerResponse } from 'node:http';
import type { StreamItem } from '../chat/chat-service.js';

/**
 * Writes a relayed stream as server-sent events, honouring backpressure. Stops (and so lets the
 * producer settle) when the client goes away.
 */
export async function writeSse(raw: ServerResponse, headers: Record<string, string>, items: AsyncGenerator<StreamItem>): Promise<void> {
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...headers,
  });
  raw.write(': TOLLGATE PROCESSING\n\n');
  // Events that arrive in one turn of the event loop (one upstream read) go out in one socket write.
  let corked = false;
  const uncork = () => {
    if (!corked) return;
    corked = false;
    raw.uncork();
  };
  try {
    for await (const item of items) {
      if (raw.destroyed) break;
      if (!corked) {
        corked = true;
        raw.cork();
        setImmediate(uncork);
      }
      const text = 'done' in item ? 'data: [DONE]\n\n' : `data: ${JSON.stringify(item.data)}\n\n`;
      if (!raw.write(text)) {
        uncork();
        await drainedOrClosed(raw);
      }
    }
  } finally {
    uncork();
    await items.return(undefined);
    if (!raw.destroyed) raw.end();
  }
}

/** Resolves when the socket can take more, or is gone; leaves no listener behind. */
function drainedOrClosed(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}
