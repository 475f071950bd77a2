import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { startGateway } from '../src/main.js';
import { createLogger } from '../src/observability/logger.js';
import { LogCapture } from './helpers/gateway.js';
import { lockedByAnotherProcess } from './helpers/sqlite-lock.js';

// A CLI verb (withGateway in cli.ts) is startGateway({ listen: false }) and one admin call. It serves
// nothing, so its write waits for a lock held elsewhere as its start does (5 s), not the 50 ms of a
// listening gateway: `tollgate credits add` from a billing script meeting a 300 ms write lock (another
// process's long transaction, an operator's sqlite3 shell) failed with "the ledger (database) does not
// answer" (exit 2) instead of waiting for it.
describe('a CLI verb meeting a write lock held elsewhere', () => {
  it('waits for a 300 ms lock as its start does (not 50 ms, as a serving gateway)', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-cli-busy-'));
    const path = join(dir, 'ledger.db');
    const config = parseConfig({
      database_url: `sqlite:${path}`,
      admin_token: 'test-admin-token-0123456789abcdef',
      secrets_key: Buffer.alloc(32, 7).toString('base64'),
      log_level: 'error',
      providers: [{ id: 'demo', type: 'demo', token_latency_ms: 0 }],
      models: [{ id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
    // The verb `accounts create`, then `credits add` while another process holds the write lock.
    const first = await startGateway(config, { listen: false, logger: createLogger('error', new LogCapture()) });
    const account = await first.admin.createAccount({ name: 'billing' });
    await first.close();
    const gw = await startGateway(config, { listen: false, logger: createLogger('error', new LogCapture()) });
    let outcome = 'credited';
    try {
      const { released } = await lockedByAnotherProcess(path, 300);
      try {
        await gw.admin.addCredits(account.id, { amount: 5 });
      } catch (err) {
        outcome = `failed: ${(err as Error).message}`;
      }
      await released;
    } finally {
      await gw.close();
    }
    expect(outcome).toBe('credited');
  });
});
