import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

const chunk = (content: string) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

describe('shutdown', () => {
  it('past its grace, cancels a running stream with the error event, settles its charge and writes it before exiting', async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    upstream.script({ kind: 'sse', events: [chunk('before '), chunk('shutdown '), chunk('never')], holdAfter: 2 });
    const dbFile = join(mkdtempSync(join(tmpdir(), 'tollgate-shutdown-')), 'ledger.db');
    const gw = await startTestGateway({
      database_url: `sqlite:${dbFile}`,
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 's/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
    const acct = await gw.account(1);
    const held = upstream.waitHeld();
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 's/m', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
    });
    await held;
    const id = res.headers.get('x-generation-id') as string;
    const closing = gw.close(); // the test gateway's grace is 2 s
    const events = await readSse(res);
    await closing;
    await upstream.stop();

    expect(contentOf(events)).toBe('before shutdown ');
    const last = events.at(-1) as { error: { code: number; message: string } };
    expect(last.error.code).toBe(503);
    expect(last.error.message).toMatch(/shutting down/);

    // Reopened after the process is gone: the charge for what was delivered is there, once.
    const ledger = new KyselyLedger(openDatabase(`sqlite:${dbFile}`));
    const gen = await ledger.getGeneration(id);
    expect(gen).toMatchObject({ cancelled: true, streamed: true });
    expect(gen?.totalCost).toBeGreaterThan(0n);
    expect((await ledger.getAccount(acct.id))?.totalUsage).toBe(gen?.totalCost);
    await ledger.close();
  });
});
