import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { serveProcess, writeYaml, type ServeProcess } from './helpers/serve-process.js';

// CONTRACT §8: "An answer delivered in full … is charged durably before that last byte is sent. A
// process killed at any moment never loses the charge of an answer a client received in full."
//
// On SQLite a group commit is made durable by appending it to the charge journal (<database>-charges/).
// When that append fails (here: the journal's directory cannot be made; in the field, a folder another
// user made, no file descriptor left, EIO) while the database's tables take writes, the commit is
// written to the tables at once. (Its charges stayed in memory, retried against the journal only, and
// after ledger.durable_wait_ms the answer went out in full anyway: a SIGKILL then lost the charge.)
const ADMIN = 'journal-test-admin-token-0123456789';
const procs: ServeProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
});

async function admin(base: string, path: string, body: unknown): Promise<any> {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.body.json();
}

describe('SQLite: the charge journal cannot be written, the database can', () => {
  it('an answer received in full is in the ledger after a SIGKILL and a restart', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-journal-unwritable-'));
    const dbFile = join(dir, 'ledger.db');
    const config = writeYaml(
      dir,
      `listen: { host: 127.0.0.1, port: 0 }
database_url: sqlite:${dbFile}
admin_token: ${ADMIN}
log_level: warn
ledger: { durable_wait_ms: 300 }
providers: [{ id: demo, type: demo, token_latency_ms: 0 }]
models:
  - id: demo/echo
    endpoints: [{ provider: demo, model: echo, pricing: { prompt: "0.000001", completion: "0.000002" } }]
`,
    );
    let gw = await serveProcess(config, { timeoutMs: 20_000 });
    procs.push(gw);
    const account = (await admin(gw.base, '/api/v1/admin/accounts', { name: 'j' })).data as { id: string };
    await admin(gw.base, `/api/v1/admin/accounts/${account.id}/credits`, { amount: 10 });
    const { key } = (await admin(gw.base, `/api/v1/admin/accounts/${account.id}/keys`, {})) as { key: string };

    // The journal's directory cannot be made: something else holds its name.
    writeFileSync(`${dbFile}-charges`, 'not a directory');

    const res = await request(`${gw.base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo', max_tokens: 20, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    expect(res.statusCode).toBe(200);
    const body = (await res.body.json()) as { id: string; usage: { cost: number } };
    expect(body.usage.cost).toBeGreaterThan(0); // received in full, with its cost

    gw.proc.kill('SIGKILL');
    await gw.exited;
    rmSync(`${dbFile}-charges`);

    gw = await serveProcess(config, { timeoutMs: 20_000 });
    procs.push(gw);
    const gen = await request(`${gw.base}/api/v1/generation?id=${encodeURIComponent(body.id)}`, { headers: { authorization: `Bearer ${key}` } });
    const status = gen.statusCode;
    await gen.body.dump();
    gw.proc.kill('SIGTERM');
    await gw.exited;
    const db = openDatabase(`sqlite:${dbFile}`);
    const acct = await db.selectFrom('accounts').select(['total_usage']).where('id', '=', account.id).executeTakeFirstOrThrow();
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
    expect({ status, total_usage: Number(acct.total_usage) }).toEqual({ status: 200, total_usage: Math.round(body.usage.cost * 1e9) });
  });
});
