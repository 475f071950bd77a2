import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { FileChargeJournal, journalDirOf } from '../src/ledger/file-charge-journal.js';
import { chargeMaker } from './helpers/charges.js';
import { Receiver } from './helpers/webhook-receiver.js';
import { ADMIN_TOKEN, startTestGateway } from './helpers/gateway.js';

// README "Alerts": key_limit_100 is sent when "a key's usage reaches 100% (the next request is refused
// with 402)", once per crossing; "Crossings live in the database, so a restart does not resend them".
// A charge that crossed the limit and was made durable in the journal, but applied to the tables only
// by the next start (a kill between the two), is applied by recoverJournal() before the alert detector
// is built: what it commits then waits for the detector (main.ts), so the crossing is alerted (every
// later request is refused with 402 and commits nothing: it would never be seen again).

describe('a limit-crossing charge replayed from the journal at start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-journal-alert-'));
  const dbFile = join(dir, 'ledger.db');
  const receiver = new Receiver();
  afterAll(async () => {
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends key_limit_100 for it', async () => {
    const url = await receiver.start();
    const T = Date.UTC(2026, 0, 5, 12);
    const config = {
      database_url: `sqlite:${dbFile}`,
      alerts: { webhooks: [{ id: 'ops', url, secret: 'whsec-0123456789abcdef' }], balance_below: 0, timeout_ms: 1000 },
    };
    const first = await startTestGateway(config, new ManualClock(T));
    const { id, key, hash } = await first.account(100, { limit: 1 });
    await first.close();

    // The process that served the answer journaled its charge (durable) and was killed before applying it.
    const charge = chargeMaker('journal-alert', T + 1000)(id, hash, 1_070_000_000n); // 1.07 credits of a 1-credit limit
    new FileChargeJournal(journalDirOf(dbFile)).append([charge]);

    const second = await startTestGateway(config, new ManualClock(T + 60_000));
    try {
      await second.webhooks.idle();
      const info = (await (await second.fetch(`/api/v1/admin/accounts/${id}/keys`, { token: ADMIN_TOKEN })).json()) as { data: Array<{ usage: number }> };
      expect(info.data[0]?.usage).toBe(1.07); // the charge was applied
      const refused = await second.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
      expect(refused.status).toBe(402); // at its limit: no further commit will ever report the crossing
      await second.webhooks.idle();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(receiver.of('key_limit_100')).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});
