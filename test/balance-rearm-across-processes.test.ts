import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseTargets } from './helpers/database.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { redisUrl } from './helpers/redis.js';
import { Receiver } from './helpers/webhook-receiver.js';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';

// README "Alerts": balance_low is sent "once, until the balance is at or above 1.2 × balance_below (a
// top-up through the admin API or the dashboard); the next fall below then alerts again", "across
// every process sharing one database". AlertDetector remembers a crossing it claimed for 60 s; a
// top-up through another process re-arms the row in the ledger and is heard through the change feed,
// so the process that claimed the first crossing asks the ledger again at the next fall below.

const postgres = databaseTargets.find((t) => t.name === 'postgres');

describe.skipIf(!postgres)('balance_low re-armed by a top-up through another gateway', () => {
  const receiver = new Receiver();
  const upstream = new ScriptedUpstream();
  let a: TestGateway;
  let b: TestGateway;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await postgres!.create();
    drop = db.drop;
    const url = await receiver.start();
    const upstreamBase = await upstream.start();
    const config = {
      database_url: db.url,
      ...(redisUrl ? { redis_url: redisUrl, redis_key_prefix: `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:` } : {}),
      providers: [{ id: 'acme', type: 'openai' as const, base_url: upstreamBase, api_key: 'k' }],
      models: [{ id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small-v1', pricing: { prompt: '0', completion: '0.01' } }] }],
      alerts: { webhooks: [{ id: 'ops', url, secret: 'whsec-0123456789abcdef', events: ['balance_low' as const] }], balance_below: 1, timeout_ms: 1000 },
      limits: { in_flight: { balance_threshold: 0 } },
    };
    a = await startTestGateway(config);
    b = await startTestGateway(config);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await receiver.stop();
    await upstream.stop();
    await drop?.();
  });

  const chat = async (gw: TestGateway, key: string, tokens: number) => {
    upstream.script({ kind: 'json', body: upstreamAnswer(tokens) });
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: key,
      body: { model: 'acme/small', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 },
    });
    expect(res.status).toBe(200);
  };

  it('alerts again when the balance falls below once more', async () => {
    const { key, id } = await a.account(1.5);
    await chat(a, key, 60); // 0.9: below 1, gateway a claims and sends
    await a.webhooks.idle();
    expect(receiver.of('balance_low')).toHaveLength(1);
    await b.admin.addCredits(id, { amount: 1 }); // 1.9 ≥ 1.2: re-armed (through gateway b's admin API)
    await b.webhooks.idle();
    await chat(a, key, 100); // 0.9: below again, a fresh crossing
    await a.webhooks.idle();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.of('balance_low')).toHaveLength(2);
  });
});
