import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { toChargeRecord } from '../src/ledger/charge-record.js';
import { chargeMaker } from './helpers/charges.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway } from './helpers/gateway.js';
import { CLI, serveProcess, writeYaml } from './helpers/serve-process.js';
import { contentOf, readSse } from './helpers/sse.js';

const run = promisify(execFile);

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

const SHUTDOWN_ADMIN = 'shutdown-admin-token-0123456789ab';
const wholeAnswer = {
  id: 'u',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late answer' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 },
};

function serveYaml(dbFile: string, upstreamBase: string, extra = ''): string {
  return `listen: { host: 127.0.0.1, port: 0 }
database_url: sqlite:${dbFile}
admin_token: ${SHUTDOWN_ADMIN}
log_level: info
providers:
  - { id: up, type: openai, base_url: ${upstreamBase} }
models:
  - id: s/m
    endpoints: [{ provider: up, model: m, pricing: { prompt: "0.000001", completion: "0.000002" } }]
${extra}`;
}

/** A prepaid account with credits and a key, made through the admin API of a running gateway. */
async function newKey(base: string, dispatcher: Agent): Promise<{ id: string; key: string }> {
  const post = async (path: string, body: unknown) =>
    (
      await request(`${base}${path}`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${SHUTDOWN_ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).body.json() as Promise<any>;
  const account = (await post('/api/v1/admin/accounts', { name: 'shutdown' })).data as { id: string };
  await post(`/api/v1/admin/accounts/${account.id}/credits`, { amount: 10 });
  const { key } = (await post(`/api/v1/admin/accounts/${account.id}/keys`, {})) as { key: string };
  return { id: account.id, key };
}

const chatCall = (base: string, key: string, dispatcher: Agent) =>
  request(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 's/m', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
  });

describe('issue 7 item 8: SIGTERM loses nothing, and exits promptly', () => {
  // Keep-alive connections that nobody closes: without the gateway closing them, `tollgate serve`
  // would wait out Fastify's 72 s keep-alive timeout, far past this test's timeout.
  const keepAlive = () => new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000, connections: 4 });

  it('with keep-alive clients connected, exits as soon as the last running request settled', { timeout: 30_000 }, async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-sigterm-'));
    const gw = await serveProcess(writeYaml(dir, serveYaml(join(dir, 'ledger.db'), base)));
    const idleClient = keepAlive();
    const busyClient = keepAlive();
    try {
      const { key } = await newKey(gw.base, idleClient);
      upstream.script({ kind: 'json', body: wholeAnswer });
      const first = await chatCall(gw.base, key, idleClient); // leaves an idle keep-alive connection
      expect(first.statusCode).toBe(200);
      await first.body.dump();

      upstream.script({ kind: 'json', body: wholeAnswer, hold: true });
      const held = upstream.waitHeld();
      const running = chatCall(gw.base, key, busyClient);
      await held;
      gw.proc.kill('SIGTERM');
      await gw.waitFor(/SIGTERM: finishing/);
      upstream.release();
      const res = await running;
      expect(res.statusCode).toBe(200);
      const body = (await res.body.json()) as { usage: { cost: number } };
      expect(body.usage.cost).toBeGreaterThan(0);
      // The busy connection finished its request during shutdown and the idle one did nothing:
      // neither may keep the process alive.
      expect(await gw.exited).toEqual({ code: 0, signal: null });
    } finally {
      gw.proc.kill('SIGKILL');
      await Promise.all([idleClient.destroy(), busyClient.destroy(), upstream.stop()]);
    }
  });

  it('when the ledger cannot be written, logs every unwritten charge in full, exits non-zero, and the log replays', { timeout: 30_000 }, async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-sigterm-'));
    const dbFile = join(dir, 'ledger.db');
    const config = writeYaml(dir, serveYaml(dbFile, base, 'ledger: { durable_wait_ms: 200, shutdown_deadline_ms: 1500 }\n'));
    const gw = await serveProcess(config);
    const client = keepAlive();
    try {
      const acct = await newKey(gw.base, client);
      upstream.script({ kind: 'json', body: wholeAnswer, hold: true });
      const held = upstream.waitHeld();
      const running = chatCall(gw.base, acct.key, client);
      await held;
      // The ledger stops taking writes while the request runs: its generations table is gone, and a file
      // stands where its charge journal's directory would be made.
      const sqlite = new BetterSqlite3(dbFile);
      sqlite.exec('ALTER TABLE generations RENAME TO generations_off');
      writeFileSync(`${dbFile}-charges`, '');
      gw.proc.kill('SIGTERM');
      await gw.waitFor(/SIGTERM: finishing/);
      upstream.release();
      const res = await running;
      expect(res.statusCode).toBe(200); // the client gets its answer; the charge stays queued
      const id = res.headers['x-generation-id'] as string;
      const answer = (await res.body.json()) as { usage: { cost: number } };

      const exit = await gw.exited;
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      const lines = gw
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; charge?: Record<string, unknown> });
      const unwritten = lines.filter((l) => l.msg === 'unwritten charge');
      expect(unwritten).toHaveLength(1);
      expect(unwritten[0]?.charge).toMatchObject({
        id,
        accountId: acct.id,
        model: 's/m',
        provider: 'up',
        tokensPrompt: 11,
        tokensCompletion: 5,
        totalCost: String(BigInt(Math.round(answer.usage.cost * 1e9))),
        streamed: false,
        cancelled: false,
      });

      // The operator brings the ledger back and replays the log: the charge lands once.
      sqlite.exec('ALTER TABLE generations_off RENAME TO generations');
      rmSync(`${dbFile}-charges`);
      sqlite.close();
      const logFile = join(dir, 'shutdown.log');
      writeFileSync(logFile, gw.output());
      const replay = async () => JSON.parse((await run(process.execPath, [CLI, 'ledger', 'replay', logFile, '--config', config, '--json'])).stdout) as unknown;
      expect(await replay()).toEqual({ charges: 1 });
      expect(await replay()).toEqual({ charges: 1 }); // replaying twice charges nothing twice
      const ledger = new KyselyLedger(openDatabase(`sqlite:${dbFile}`));
      expect((await ledger.getGeneration(id))?.totalCost).toBe(BigInt(Math.round(answer.usage.cost * 1e9)));
      expect((await ledger.getAccount(acct.id))?.totalUsage).toBe(BigInt(Math.round(answer.usage.cost * 1e9)));
      await ledger.close();
    } finally {
      gw.proc.kill('SIGKILL');
      await Promise.all([client.destroy(), upstream.stop()]);
    }
  });

  it('a replay the database refuses a charge of exits non-zero, naming it, rather than reporting it written', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-replay-'));
    const config = writeYaml(dir, serveYaml(join(dir, 'ledger.db'), 'http://127.0.0.1:9'));
    // As a shutdown logs it (money as strings), with a cost no BIGINT column holds.
    const charge = toChargeRecord({ ...chargeMaker('replay', Date.now())('acct_replay', 'k'.repeat(64), 2n ** 64n), id: 'gen-replay-refused' });
    const logFile = join(dir, 'gateway.log');
    writeFileSync(logFile, `${JSON.stringify({ level: 50, time: Date.now(), msg: 'unwritten charge', charge })}\n`);
    const replay = await run(process.execPath, [CLI, 'ledger', 'replay', logFile, '--config', config, '--json']).then(
      () => undefined,
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(replay?.code).toBe(1);
    expect(replay?.stderr).toContain('1 of 1 charges could not be written (gen-replay-refused)');
    expect(replay?.stdout).not.toContain('"charges"');
    rmSync(dir, { recursive: true, force: true });
  });
});
