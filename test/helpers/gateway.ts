import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ManualClock, type Clock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type Gateway } from '../../src/main.js';
import { createLogger } from '../../src/observability/logger.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** Everything the gateway logged, to assert that no secret reaches the log. */
export class LogCapture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

export interface TestGateway extends Gateway {
  base: string;
  log: LogCapture;
  clock: Clock;
  /** Calls the gateway over HTTP. */
  fetch(path: string, init?: { method?: string; body?: unknown; rawBody?: string; token?: string; headers?: Record<string, string> }): Promise<Response>;
  /** A prepaid account with `credits` purchased and one key. */
  account(credits?: number, keyBody?: Record<string, unknown>): Promise<{ id: string; key: string; hash: string }>;
}

/** Starts a whole gateway in process on a loopback port, with an injected clock and captured log. */
export async function startTestGateway(overrides: Partial<ConfigInput> = {}, clock: Clock = new ManualClock(Date.now())): Promise<TestGateway> {
  const log = new LogCapture();
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    database_url: 'sqlite::memory:',
    admin_token: ADMIN_TOKEN,
    secrets_key: Buffer.alloc(32, 7).toString('base64'),
    providers: [{ id: 'demo', type: 'demo', token_latency_ms: 0 }],
    models: [
      { id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
      { id: 'demo/echo:free', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }] },
    ],
    log_level: 'info',
    ...overrides,
    // PostgreSQL's fallback journal in a directory of this gateway's own, not the working directory.
    // (Created only if a charge goes to it.)
    ledger: { journal_dir: join(tmpdir(), `tollgate-test-charges-${randomUUID()}`), ...overrides.ledger },
  });
  const gw = await startGateway(config, { clock, logger: createLogger('info', log), shutdownGraceMs: 2000 });
  const base = gw.url as string;
  const call: TestGateway['fetch'] = (path, init = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    let body: string | undefined = init.rawBody;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    return fetch(`${base}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  };
  const account: TestGateway['account'] = async (credits = 10, keyBody = {}) => {
    const acct = await gw.admin.createAccount({ name: 'test' });
    if (credits > 0) await gw.admin.addCredits(acct.id, { amount: credits });
    const { key, data } = await gw.admin.createKey(acct.id, keyBody);
    return { id: acct.id, key, hash: data.hash };
  };
  return Object.assign(gw, { base, log, clock, fetch: call, account });
}
