import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { parseConfig } from '../src/config/load.js';
import { startGateway } from '../src/main.js';
import { createLogger } from '../src/observability/logger.js';
import { ADMIN_TOKEN, LogCapture, startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * The default single node (SQLite, no Redis) with admin work done through the CLI's verbs (CONTRACT §1),
 * each a process of its own on the same database: `tollgate credits add` is `startGateway(...)` +
 * `admin.addCredits` + `close()`. The serving process learns of its own commits at once; another
 * process's show once its money snapshot is read again, within 1 s (MemoryHoldStore's snapshotTtlMs):
 *  - credits bought through the CLI unblock an account the server refuses (spec, 402 rule 2: "adding
 *    credits to bring the balance above zero removes them");
 *  - a negative adjustment through the CLI is held against the next request.
 */
const SECRETS = Buffer.alloc(32, 7).toString('base64');
const MODELS = [{ id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] }];

describe('credits changed through the CLI reach the running single-node server', () => {
  let dir: string;
  let dbUrl: string;
  let gw: TestGateway;
  let clock: ManualClock;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cli-money-'));
    dbUrl = `sqlite:${join(dir, 'ledger.db')}`;
    clock = new ManualClock(Date.now());
    gw = await startTestGateway({ database_url: dbUrl, models: MODELS }, clock);
  });

  afterEach(async () => {
    await gw.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  /** What `tollgate credits add ACCOUNT AMOUNT [--kind adjustment]` does: a gateway of its own on the same ledger, not listening. */
  async function cliCreditsAdd(accountId: string, amount: number, kind: 'purchase' | 'adjustment'): Promise<void> {
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      database_url: dbUrl,
      admin_token: ADMIN_TOKEN,
      secrets_key: SECRETS,
      providers: [{ id: 'demo', type: 'demo', token_latency_ms: 0 }],
      models: MODELS,
      log_level: 'error',
    });
    const cli = await startGateway(config, { listen: false, logger: createLogger('error', new LogCapture()) });
    try {
      await cli.admin.addCredits(accountId, { amount, kind });
    } finally {
      await cli.close();
    }
  }

  const ask = (key: string) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });

  it('credits purchased through the CLI let a refused account be served (within the 1 s admin changes get)', async () => {
    const a = await gw.account(0);
    expect((await ask(a.key)).status).toBe(402); // nothing to pay with: refused, and its money view is now cached in the store

    await cliCreditsAdd(a.id, 10, 'purchase');
    clock.advance(2_000); // well past the 1 s admin changes may take

    const after = await ask(a.key);
    expect(after.status).toBe(200);
  });

  it('a negative adjustment through the CLI is held against the next request', async () => {
    const a = await gw.account(1);
    expect((await ask(a.key)).status).toBe(200);
    await gw.ledger.flush();

    // The operator takes the whole credit back: the balance is now below zero.
    await cliCreditsAdd(a.id, -1, 'adjustment');
    clock.advance(2_000);

    const ledgerBalance = (await gw.ledger.moneySnapshot(a.id))?.account?.balance;
    expect(ledgerBalance).toBeLessThan(0n);
    // Not admitted against the positive balance it read before: refused, as the ledger's balance is below zero.
    expect((await ask(a.key)).status).toBe(402);
  });
});
