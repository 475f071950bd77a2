import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { instant } from './instant.js';

/** One scripted answer of the fake upstream. */
export type Script =
  | {
      kind: 'json';
      status?: number;
      body: unknown;
      /** When set, the body is made from the request instead (e.g. a token count that depends on its max_tokens). */
      bodyFor?: (received: Received) => unknown;
      headers?: Record<string, string>;
      /** Wait for `release()` before answering. */
      hold?: boolean;
      /** Wait this long before answering (a provider that takes its time; keeps requests in flight under load). */
      delayMs?: number;
    }
  | { kind: 'text'; status: number; body: string; headers?: Record<string, string> }
  | {
      kind: 'sse';
      /** Each entry is sent as `data: <entry>\n\n`. */
      events: string[];
      /** Send `data: [DONE]` at the end (default true). */
      done?: boolean;
      /** Stop after this many events and destroy the connection (a failure mid-stream). */
      destroyAfter?: number;
      /** Stop after this many events and wait for `release()` before sending the rest. */
      holdAfter?: number;
      /** After `data: [DONE]`, keep the response open until `release()` (an upstream slow to end its body). */
      holdAfterDone?: boolean;
    }
  | { kind: 'hang' }
  | { kind: 'destroy' };

export interface Received {
  /** When it arrived (instant.ts: ms since the epoch, to a fraction of a ms). */
  at: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  /** The body as it came (what JSON.parse would round: a number of many digits, as written). */
  text: string;
  /** The client's port: requests with the same one came on the same connection. */
  port: number | undefined;
}

const fixturesDir = fileURLToPath(new URL('../fixtures/upstream/', import.meta.url));

/** A recorded provider answer from test/fixtures/upstream. */
export function fixture(name: string): string {
  return readFileSync(`${fixturesDir}${name}`, 'utf8');
}

export function fixtureJson(name: string): unknown {
  return JSON.parse(fixture(name));
}

export function fixtureChunks(name: string): string[] {
  return fixture(name)
    .split('\n')
    .filter((l) => l.trim().length > 0);
}

/**
 * A provider on loopback that answers from a script: each request takes the next script (the last
 * one repeats). It records what it received, so tests can assert on what the gateway sent.
 */
/** A whole upstream answer ("ok") that reports 5 prompt tokens and `completionTokens` completion tokens. */
export const upstreamAnswer = (completionTokens: number) => ({
  id: 'up',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: completionTokens, total_tokens: 5 + completionTokens },
});

export class ScriptedUpstream {
  readonly received: Received[] = [];
  private scripts: Script[] = [];
  private server: Server | undefined;
  private holds: Array<() => void> = [];
  private held: Array<() => void> = [];
  private mostHeld = 0;
  private readonly sockets = new Set<Socket>();
  /** Connections accepted since the start. */
  connections = 0;

  script(...scripts: Script[]): this {
    this.scripts = scripts;
    return this;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  /** How many requests wait at a hold point now. */
  get holding(): number {
    return this.holds.length;
  }

  /** The most requests that waited at a hold point at once, since the start or `resetMaxHolding()`. */
  get maxHolding(): number {
    return this.mostHeld;
  }

  /** Starts counting `maxHolding` afresh from what is held now. */
  resetMaxHolding(): void {
    this.mostHeld = this.holds.length;
  }

  /** Resolves once a held stream reached its hold point. */
  waitHeld(): Promise<void> {
    return new Promise((resolve) => this.held.push(resolve));
  }

  /** Resolves once `n` requests wait at a hold point. */
  async waitHolding(n: number): Promise<void> {
    while (this.holds.length < n) await this.waitHeld();
  }

  private hold(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.holds.push(resolve);
      this.mostHeld = Math.max(this.mostHeld, this.holds.length);
      this.held.splice(0).forEach((h) => h());
    });
  }

  /** Lets every held stream go on. */
  release(): void {
    const holds = this.holds;
    this.holds = [];
    holds.forEach((h) => h());
  }

  private next(): Script {
    const s = this.scripts.length > 1 ? this.scripts.shift() : this.scripts[0];
    if (!s) throw new Error('ScriptedUpstream: no script');
    return s;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      // leave empty
    }
    const received: Received = { at: instant(), path: req.url ?? '', headers: req.headers, body, text: raw, port: req.socket.remotePort };
    this.received.push(received);
    const s = this.next();
    switch (s.kind) {
      case 'json':
        if (s.hold) await this.hold();
        if (s.delayMs) await new Promise((resolve) => setTimeout(resolve, s.delayMs));
        if (res.destroyed) return;
        res.writeHead(s.status ?? 200, { 'content-type': 'application/json', ...s.headers });
        res.end(JSON.stringify(s.bodyFor ? s.bodyFor(received) : s.body));
        return;
      case 'text':
        res.writeHead(s.status, { 'content-type': 'text/plain', ...s.headers });
        res.end(s.body);
        return;
      case 'hang':
        return;
      case 'destroy':
        req.socket.destroy();
        return;
      case 'sse': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < s.events.length; i++) {
          if (s.destroyAfter !== undefined && i === s.destroyAfter) {
            res.destroy();
            return;
          }
          if (s.holdAfter !== undefined && i === s.holdAfter) await this.hold();
          if (res.destroyed) return;
          // Each event reaches the socket before the next step of the script.
          await new Promise<void>((resolve) => res.write(`data: ${s.events[i]}\n\n`, () => resolve()));
        }
        if (s.done !== false) await new Promise<void>((resolve) => res.write('data: [DONE]\n\n', () => resolve()));
        if (s.holdAfterDone) await this.hold();
        res.end();
      }
    }
  }

  async stop(): Promise<void> {
    this.release();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
