import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// A stream is charged for what it wrote to the client, not for what it read from the upstream after
// the client left. A client that stopped reading and then left: the gateway waited for it to drain,
// the upstream meanwhile sent more (read and queued); that batch is never written, so it is never
// counted (the relay counts a batch once its consumer resumes it after writing: chat-service.ts relay).

const chunk = (content: string) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

// More than the loopback sockets' buffers take, so that the gateway's write of it backs up.
const WRITTEN = 'hello '.repeat(1_000_000); // 6 MB
const NEVER_WRITTEN = 'unsent '.repeat(2_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the last batch of a stream whose client is gone', () => {
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 't/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('is not charged for a batch that was never written to the client', async () => {
    upstream.script({ kind: 'sse', events: [chunk(WRITTEN), chunk(NEVER_WRITTEN)], holdAfter: 1 });
    const acct = await gw.account(100);
    const held = upstream.waitHeld();
    let req: ClientRequest | undefined;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req = request(
        new URL(`${gw.base}/api/v1/chat/completions`),
        { method: 'POST', headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' } },
        resolve,
      );
      req.on('error', reject);
      req.end(JSON.stringify({ model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    });
    expect(res.statusCode).toBe(200);
    res.pause(); // the client stops reading: the gateway's write of the first batch backs up
    res.on('error', () => undefined);
    const id = res.headers['x-generation-id'] as string;

    await held;
    await sleep(300); // the gateway wrote the first batch and waits for the client to drain it
    upstream.release(); // the upstream sends the rest and [DONE]: the gateway reads it, queued
    await sleep(300);
    req?.destroy(); // the client goes away

    const gen = await vi.waitFor(
      async () => {
        const g = await gw.ledger.getGeneration(id);
        if (!g) throw new Error('not settled yet');
        return g;
      },
      { timeout: 10_000 },
    );
    // Cancelled: the relay was stopped at a yield, so the batch it yielded last was not written (writeSse
    // asks for the next item after every write; the stream would otherwise have ended, not cancelled).
    expect(gen.cancelled).toBe(true);
    // At most what the gateway wrote (the 6 MB batch); the batch read after the client left was never written.
    expect(gen.tokensCompletion, 'charged for the batch that was never written').toBe(countTokens(WRITTEN));
  });
});
