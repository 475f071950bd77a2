import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An upstream that answers every request with `parts`, each its own write, flushed before the next;
 * at `holdBefore` it waits for `release()` (so that the gateway relays what came before as a stream
 * under way, not with the stream's end).
 */
export class ByteUpstream {
  parts: Array<Buffer | string> = [];
  holdBefore = -1;
  private released: () => void = () => undefined;
  private server: Server | undefined;

  release(): void {
    this.released();
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const [i, p] of this.parts.entries()) {
          if (i === this.holdBefore) await new Promise<void>((resolve) => (this.released = resolve));
          await new Promise<void>((resolve) => res.write(p, () => resolve()));
        }
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
