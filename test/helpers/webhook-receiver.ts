import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One webhook delivery as received: its headers, its body as sent, and that body read. */
export interface Delivery {
  headers: IncomingMessage['headers'];
  raw: string;
  json: { id: string; type: string; created_at: string; data: Record<string, unknown> };
}

/** A webhook receiver on loopback: answers 200 (or `status`), or never answers while `hang` is set. */
export class Receiver {
  readonly received: Delivery[] = [];
  status = 200;
  hang = false;
  private readonly hanging: ServerResponse[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  of(type: string): Delivery[] {
    return this.received.filter((d) => d.json.type === type);
  }

  async stop(): Promise<void> {
    this.hanging.forEach((r) => r.destroy());
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    this.received.push({ headers: req.headers, raw, json: JSON.parse(raw) as Delivery['json'] });
    if (this.hang) {
      this.hanging.push(res);
      return;
    }
    res.writeHead(this.status).end();
  }
}
