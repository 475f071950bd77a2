import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { databaseTargets } from './helpers/database.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { serveProcess, writeYaml, type ServeProcess } from './helpers/serve-process.js';

const ADMIN = 'kill-nine-admin-token-0123456789';
const usage = { prompt_tokens: 13, completion_tokens: 7, total_tokens: 20 };
const jsonAnswer = {
  id: 'u',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'a whole answer' }, finish_reason: 'stop' }],
  usage,
};
const sseChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const sseEvents = [
  sseChunk({ role: 'assistant', content: '' }),
  sseChunk({ content: 'a ' }),
  sseChunk({ content: 'streamed ' }),
  sseChunk({ content: 'answer' }),
  sseChunk({}, 'stop'),
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage }),
];

function configYaml(databaseUrl: string, jsonBase: string, sseBase: string): string {
  return `listen: { host: 127.0.0.1, port: 0 }
database_url: ${databaseUrl}
admin_token: ${ADMIN}
log_level: warn
limits: { ddos: { per_ip_per_second: 1000000 } }
providers:
  - { id: upjson, type: openai, base_url: ${jsonBase} }
  - { id: upsse, type: openai, base_url: ${sseBase} }
models:
  - id: k/json
    endpoints: [{ provider: upjson, model: m, pricing: { prompt: "0.000001", completion: "0.000002" } }]
  - id: k/sse
    endpoints: [{ provider: upsse, model: m, pricing: { prompt: "0.000001", completion: "0.000002" } }]
`;
}

/** An answer the client received in full: its generation id and the cost it was told. */
interface Received {
  id: string;
  cost: number;
}

async function admin(base: string, path: string, body: unknown): Promise<any> {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.body.json();
}

/** One client request; resolves with the answer when it arrived in full, undefined when it did not. */
async function ask(dispatcher: Agent, base: string, key: string, stream: boolean): Promise<Received | undefined> {
  const res = await request(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: stream ? 'k/sse' : 'k/json', stream, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    return undefined;
  }
  if (!stream) {
    const body = (await res.body.json()) as { id: string; usage: { cost: number } };
    return { id: body.id, cost: body.usage.cost };
  }
  // A stream counts as received in full once its usage chunk (with the cost) arrived.
  let buffered = '';
  let got: Received | undefined;
  try {
    for await (const part of res.body) {
      buffered += (part as Buffer).toString('utf8');
      let at: number;
      while ((at = buffered.indexOf('\n\n')) >= 0) {
        const event = buffered.slice(0, at);
        buffered = buffered.slice(at + 2);
        if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
        const data = JSON.parse(event.slice(6)) as { id: string; usage?: { cost?: number } };
        if (typeof data.usage?.cost === 'number') got = { id: data.id, cost: data.usage.cost };
      }
    }
  } catch {
    // the process was killed mid-stream: what arrived before counts
  }
  return got;
}

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

for (const target of databaseTargets) {
  describe(`issue 7 item 9: kill -9 under load loses no answer delivered in full (${target.name})`, () => {
    it('every answer received in full is in the ledger once, at its cost, after a SIGKILL and a restart', { timeout: 90_000 }, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-kill9-'));
      const databaseUrl = target.name === 'sqlite' ? `sqlite:${join(dir, 'ledger.db')}` : (await target.create().then((c) => (cleanups.push(c.drop), c))).url;
      const jsonUp = new ScriptedUpstream().script({ kind: 'json', body: jsonAnswer });
      const sseUp = new ScriptedUpstream().script({ kind: 'sse', events: sseEvents });
      const config = writeYaml(dir, configYaml(databaseUrl, await jsonUp.start(), await sseUp.start()));
      cleanups.push(
        () => jsonUp.stop(),
        () => sseUp.stop(),
      );

      let gw: ServeProcess = await serveProcess(config);
      cleanups.push(async () => void gw.proc.kill('SIGKILL'));
      const account = (await admin(gw.base, '/api/v1/admin/accounts', { name: 'load', type: 'enterprise' })).data as { id: string };
      await admin(gw.base, `/api/v1/admin/accounts/${account.id}/credits`, { amount: 1000 });
      const { key } = (await admin(gw.base, `/api/v1/admin/accounts/${account.id}/keys`, {})) as { key: string };

      const dispatcher = new Agent({ connections: 64 });
      const received: Received[] = [];
      const clients = 30;
      const killAfter = 150;
      let killed = false;
      const kill = () => {
        if (killed) return;
        killed = true;
        gw.proc.kill('SIGKILL');
      };
      const worker = async (n: number) => {
        for (let i = 0; !killed; i++) {
          const got = await ask(dispatcher, gw.base, key, (n + i) % 2 === 0).catch(() => undefined);
          if (got) received.push(got);
          if (received.length >= killAfter) kill();
        }
      };
      await Promise.all(Array.from({ length: clients }, (_, n) => worker(n)));
      expect((await gw.exited).signal).toBe('SIGKILL');
      await dispatcher.close();

      // Restart on the same database: what the dead process made durable is what there is.
      gw = await serveProcess(config);
      const lost: Received[] = [];
      for (const r of received) {
        const res = await request(`${gw.base}/api/v1/generation?id=${encodeURIComponent(r.id)}`, { headers: { authorization: `Bearer ${key}` } });
        if (res.statusCode !== 200) {
          await res.body.dump();
          lost.push(r);
          continue;
        }
        const gen = ((await res.body.json()) as { data: { total_cost: number } }).data;
        expect(gen.total_cost).toBe(r.cost);
      }
      gw.proc.kill('SIGTERM');
      await gw.exited;

      const db = openDatabase(databaseUrl);
      try {
        const acct = await db
          .selectFrom('accounts')
          .select(['balance', 'total_purchased', 'total_usage'])
          .where('id', '=', account.id)
          .executeTakeFirstOrThrow();
        const gens = await db.selectFrom('generations').select(['id', 'total_cost']).where('account_id', '=', account.id).execute();
        const dupes = await sql<{ n: number }>`SELECT COUNT(*) - COUNT(DISTINCT id) AS n FROM generations`.execute(db);
        const sum = gens.reduce((s, g) => s + BigInt(String(g.total_cost)), 0n);
        process.stderr.write(
          `kill -9 on ${target.name}: ${received.length} answers received in full, ${received.length - lost.length} charged, ${lost.length} lost; ${gens.length} generations in the ledger\n`,
        );
        expect(lost).toEqual([]);
        expect(Number(dupes.rows[0]?.n)).toBe(0);
        expect(BigInt(String(acct.balance))).toBe(BigInt(String(acct.total_purchased)) - sum);
        expect(BigInt(String(acct.total_usage))).toBe(sum);
      } finally {
        await db.destroy();
      }
    });
  });
}
