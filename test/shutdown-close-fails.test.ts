import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UNWRITTEN_CHARGE } from '../src/ledger/charge-record.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway } from './helpers/gateway.js';
import { readSse } from './helpers/sse.js';

// Shutdown when the server fails to close (app.close() rejects, as it would if a preClose or onClose
// hook failed; fault injection). Running requests still finish within the grace before the ledger
// closes: a charge made after the ledger closed would be neither written nor logged. The failure is
// thrown once the ledger is closed.

const chunk = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'u',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('shutdown when the server fails to close', () => {
  it('a request still running when the ledger closes is charged, or its charge is logged as unwritten', async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    upstream.script({
      kind: 'sse',
      events: [chunk('before '), chunk('after', { usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })],
      holdAfter: 1,
    });
    const dbFile = join(mkdtempSync(join(tmpdir(), 'tollgate-close-fails-')), 'ledger.db');
    const gw = await startTestGateway({
      database_url: `sqlite:${dbFile}`,
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 's/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
      ledger: { durable_wait_ms: 100 },
    });
    const acct = await gw.account(1);
    const held = upstream.waitHeld();
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 's/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-generation-id') as string;
    await held; // the request is running

    const realClose = gw.app.close.bind(gw.app);
    (gw.app as unknown as { close: () => Promise<void> }).close = () => Promise.reject(new Error('injected: app.close() failed'));
    const closing = gw.close().then(
      () => undefined,
      (err: unknown) => err,
    );
    await sleep(500); // close() went on to ledger.close() meanwhile
    upstream.release(); // the running request ends now, and settles
    const events = await readSse(res);
    const usage = (events.at(-2) as { usage?: { cost: number } }).usage;
    expect(usage?.cost, 'the client got the whole answer, with its cost').toBeGreaterThan(0);
    expect(((await closing) as Error | undefined)?.message, 'close() reports the failure once the ledger is closed').toBe('injected: app.close() failed');
    await realClose();
    await upstream.stop();

    const ledger = new KyselyLedger(openDatabase(`sqlite:${dbFile}`));
    await ledger.recoverJournal(); // a charge journaled before the stop counts too
    const written = await ledger.getGeneration(id);
    await ledger.close();
    const logged = gw.log.text.split('\n').some((l) => l.includes(UNWRITTEN_CHARGE) && l.includes(id));
    expect(written !== undefined || logged, 'the charge of an answer delivered in full is in the ledger or logged as unwritten').toBe(true);
  });
});
