import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledWithin } from '../src/settled-within.js';
import { databaseTargets } from './helpers/database.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * Shutdown while the ledger applies backpressure (docs/charging.md): past `ledger.max_queued_charges`
 * unwritten charges, answers wait for their own charge without bound. Shutdown (CONTRACT §1) lets
 * running requests finish, cancels them past the grace, then writes every queued charge until
 * `ledger.shutdown_deadline_ms` and logs what it could not ("unwritten charge") for replay. The grace
 * also lets the held-back answers go (Ledger.releaseAnswers): otherwise shutdown would wait on them for
 * ever and never log the charges already queued, those of answers delivered after the bounded wait too.
 */
const pgTarget = databaseTargets.find((t) => t.name === 'postgres');

describe.skipIf(!pgTarget)('shutdown under ledger backpressure', () => {
  let db: { url: string; drop(): Promise<void> };
  let gw: TestGateway;
  let admin: pg.Client;

  beforeAll(async () => {
    db = await (pgTarget as NonNullable<typeof pgTarget>).create();
    gw = await startTestGateway({
      database_url: db.url,
      log_level: 'warn',
      ledger: { durable_wait_ms: 200, max_queued_charges: 2, shutdown_deadline_ms: 1000 },
    });
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
  });

  afterAll(async () => {
    // Let the writes through again so that the gateway can finish closing.
    await admin.query('DROP TRIGGER IF EXISTS refuse_charges ON generations').catch(() => undefined);
    await admin.end().catch(() => undefined);
    await settledWithin(gw.close(), 15_000);
    await db.drop();
  });

  it('SIGTERM ends within its bounds and logs every charge it could not write (none is lost in memory)', async () => {
    const a = await gw.account(10);
    // The database refuses every charge for now (a rule the operator added, a read-only replica after a
    // failover, a full disk...): docs/charging.md says the charges are then kept and retried, never set aside.
    await admin.query(`CREATE FUNCTION refuse_charge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'charges refused for now'; END $$`);
    await admin.query('CREATE TRIGGER refuse_charges BEFORE INSERT ON generations FOR EACH ROW EXECUTE FUNCTION refuse_charge()');

    const ask = (signal?: AbortSignal) =>
      fetch(`${gw.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo/echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        signal,
      });

    // Delivered in full after the bounded wait: its charge is only in memory now.
    const first = await ask();
    expect(first.status).toBe(200);
    const delivered = (await first.json()) as { id: string };

    // Two more: past max_queued_charges their answers wait for their own charge (backpressure).
    const abort = new AbortController();
    const waiting = [ask(abort.signal).catch(() => undefined), ask(abort.signal).catch(() => undefined)];
    await new Promise((resolve) => setTimeout(resolve, 600)); // their durable wait (200 ms) is over

    // SIGTERM: grace 2 s (test gateway), then the ledger's deadline of 1 s. Generous bound: 8 s.
    const closed = await settledWithin(gw.close(), 8_000);
    abort.abort();
    await Promise.all(waiting);

    expect(closed).toBe(true);
    // The delivered answer's charge is logged for replay.
    expect(gw.log.text).toContain(delivered.id);
    expect(gw.log.text).toContain('unwritten charge');
  }, 30_000);
});
