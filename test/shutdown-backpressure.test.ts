import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledWithin } from '../src/settled-within.js';
import { databaseTargets } from './helpers/database.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * Shutdown while PostgreSQL refuses every charge and the ledger applies backpressure (docs/charging.md):
 * past `ledger.max_queued_charges` unwritten charges, answers wait for their own charge without bound.
 * Shutdown (CONTRACT §1) lets running requests finish, cancels them past the grace, then writes every
 * queued charge until `ledger.shutdown_deadline_ms`. The grace also lets the held-back answers go
 * (Ledger.releaseAnswers): otherwise shutdown would wait on them for ever.
 *
 * What becomes of the charges the database did not take: with the fallback journal (`ledger.journal_dir`)
 * they are on disk before their answers go, and the next start applies them, each once; when the journal
 * cannot be written either, they are logged in full ("unwritten charge") for replay. None is lost.
 */
const pgTarget = databaseTargets.find((t) => t.name === 'postgres');

describe.skipIf(!pgTarget)('shutdown under ledger backpressure, PostgreSQL refusing charges', () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Client;
  const started: TestGateway[] = [];

  beforeAll(async () => {
    db = await (pgTarget as NonNullable<typeof pgTarget>).create();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query(`CREATE FUNCTION refuse_charge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'charges refused for now'; END $$`);
  });

  afterAll(async () => {
    // Let the writes through again so that every gateway can finish closing.
    await admin.query('DROP TRIGGER IF EXISTS refuse_charges ON generations').catch(() => undefined);
    await admin.end().catch(() => undefined);
    for (const gw of started) await settledWithin(gw.close(), 15_000);
    await db.drop();
  });

  const gateway = async (journalDir: string) => {
    const gw = await startTestGateway({
      database_url: db.url,
      log_level: 'warn',
      ledger: { durable_wait_ms: 200, max_queued_charges: 2, shutdown_deadline_ms: 1000, journal_dir: journalDir },
    });
    started.push(gw);
    return gw;
  };

  /** One answer delivered after the bounded wait, two held back by backpressure, then SIGTERM. */
  async function scenario(gw: TestGateway): Promise<{ delivered: string; closed: boolean; accountId: string }> {
    const a = await gw.account(10);
    // The database refuses every charge for now (a rule the operator added, a read-only replica after a
    // failover, a full disk...): docs/charging.md says the charges are then kept and retried, never set aside.
    await admin.query('DROP TRIGGER IF EXISTS refuse_charges ON generations');
    await admin.query('CREATE TRIGGER refuse_charges BEFORE INSERT ON generations FOR EACH ROW EXECUTE FUNCTION refuse_charge()');
    const ask = (signal?: AbortSignal) =>
      fetch(`${gw.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo/echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        signal,
      });
    // Delivered in full after the bounded wait.
    const first = await ask();
    expect(first.status).toBe(200);
    const delivered = ((await first.json()) as { id: string }).id;
    // Two more: past max_queued_charges their answers wait for their own charge (backpressure).
    const abort = new AbortController();
    const waiting = [ask(abort.signal).catch(() => undefined), ask(abort.signal).catch(() => undefined)];
    await new Promise((resolve) => setTimeout(resolve, 600)); // their durable wait (200 ms) is over
    // SIGTERM: grace 2 s (test gateway), then the ledger's deadline of 1 s. Generous bound: 8 s.
    const closed = await settledWithin(gw.close(), 8_000);
    abort.abort();
    await Promise.all(waiting);
    return { delivered, closed, accountId: a.id };
  }

  it('with the fallback journal: nothing is left unwritten in memory; the next start applies every charge, each once', async () => {
    const journalDir = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
    const gw = await gateway(journalDir);
    const { delivered, closed, accountId } = await scenario(gw);
    expect(closed).toBe(true);
    expect(gw.log.text).not.toContain('unwritten charge');
    // The database takes charges again; a new process on the same database and journal directory.
    await admin.query('DROP TRIGGER refuse_charges ON generations');
    const next = await gateway(journalDir);
    expect(await next.ledger.getGeneration(delivered)).toBeDefined();
    const { rows } = await admin.query('SELECT count(*)::int AS n, sum(total_cost)::text AS cost FROM generations WHERE account_id = $1', [accountId]);
    expect(rows[0].n).toBe(3); // the delivered one and the two let go at shutdown
    const account = await next.ledger.getAccount(accountId);
    expect(account?.totalUsage).toBe(BigInt(rows[0].cost));
  }, 30_000);

  it('when the journal cannot be written either: every charge it could not write is logged in full for replay', async () => {
    const blocked = join(mkdtempSync(join(tmpdir(), 'tollgate-fallback-')), 'a-file');
    writeFileSync(blocked, ''); // a file where the directory should be: nothing can be written under it
    const gw = await gateway(join(blocked, 'charges'));
    const { delivered, closed } = await scenario(gw);
    expect(closed).toBe(true);
    const unwritten = gw.log.text.split('\n').filter((l) => l.includes('unwritten charge'));
    expect(unwritten.some((l) => l.includes(delivered))).toBe(true);
    await admin.query('DROP TRIGGER refuse_charges ON generations');
  }, 30_000);
});
