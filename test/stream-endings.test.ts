import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

const chunk = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'u1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  });
const words = ['alpha ', 'beta ', 'gamma ', 'delta ', 'epsilon ', 'zeta'];

describe('how a stream ends decides what is charged', () => {
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway({
      // One connection: a request after another comes on the same one unless the first was torn down.
      providers: [{ id: 'up', type: 'openai', base_url: base, connections: 1 }],
      models: [{ id: 't/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  const streamBody = { model: 't/m', stream: true, messages: [{ role: 'user', content: 'count for me' }] };

  it('an upstream failure after output becomes the error event, and what was delivered is charged once', async () => {
    upstream.script({ kind: 'sse', events: words.map((w) => chunk(w)), destroyAfter: 3 });
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: streamBody });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events).not.toContain('[DONE]');
    const last = events.at(-1) as Record<string, any>;
    expect(last.error).toMatchObject({ code: 502 });
    expect(last.error.message).toMatch(/upstream/);
    expect(last.choices).toEqual([{ index: 0, delta: { content: '' }, finish_reason: 'error' }]);
    const delivered = contentOf(events);
    expect(delivered).toBe('alpha beta gamma ');
    const gen = await gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect(gen).toMatchObject({ finishReason: 'error', cancelled: false, tokensCompletion: countTokens(delivered) });
    expect(gen?.totalCost).toBeGreaterThan(0n);
    const account = await gw.admin.getAccount(acct.id);
    expect(BigInt(Math.round(account.total_usage * 1e9))).toBe(gen?.totalCost);
  });

  it('an upstream error chunk mid-stream carries the rate limit through as a 429 event with the provider code', async () => {
    upstream.script({ kind: 'sse', events: [chunk('one '), JSON.stringify({ error: { code: 'rate_limit_exceeded', message: 'slow down' } })], done: false });
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: streamBody });
    const events = await readSse(res);
    const last = events.at(-1) as Record<string, any>;
    expect(last.error).toMatchObject({ code: 429, metadata: { provider_name: 'up', provider_code: 'rate_limit_exceeded' } });
    expect(last.choices[0].finish_reason).toBe('error');
  });

  it('a client that disconnects mid-stream is charged for what was delivered, marked cancelled, once', async () => {
    upstream.script({ kind: 'sse', events: words.map((w) => chunk(w)), holdAfter: 2 });
    const acct = await gw.account(1);
    const controller = new AbortController();
    const held = upstream.waitHeld();
    const res = await fetch(`${gw.base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(streamBody),
      signal: controller.signal,
    });
    const id = res.headers.get('x-generation-id') as string;
    await held;
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('beta')) seen += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const gen = await vi.waitFor(async () => {
      const g = await gw.ledger.getGeneration(id);
      if (!g) throw new Error('not settled yet');
      return g;
    });
    upstream.release();
    expect(gen).toMatchObject({ cancelled: true, streamed: true, tokensCompletion: countTokens('alpha beta ') });
    const account = await gw.admin.getAccount(acct.id);
    expect(BigInt(Math.round(account.total_usage * 1e9))).toBe(gen.totalCost);
  });

  it('a stream whose upstream sends no usage is charged at counted tokens', async () => {
    upstream.script({
      kind: 'sse',
      events: [chunk('hello '), chunk('world', { choices: [{ index: 0, delta: { content: 'world' }, finish_reason: 'stop' }] })],
    });
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: streamBody });
    const events = await readSse(res);
    const usage = (events.at(-2) as Record<string, any>).usage;
    expect(usage.completion_tokens).toBe(countTokens('hello world'));
    expect(usage.prompt_tokens).toBeGreaterThan(countTokens('count for me'));
    expect(usage.cost).toBe((usage.prompt_tokens * 1 + usage.completion_tokens * 2) / 1e6);
  });

  it('issue 9: an upstream that keeps its body open after [DONE] holds back neither the answer nor its connection', async () => {
    const last = chunk('world', { choices: [{ index: 0, delta: { content: 'world' }, finish_reason: 'stop' }] });
    upstream.script({ kind: 'sse', events: [chunk('hello '), last], holdAfterDone: true }, { kind: 'sse', events: [chunk('again')] });
    const acct = await gw.account(1);
    const held = upstream.waitHeld();
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: streamBody });
    // The whole answer arrives (usage chunk and [DONE]) while the upstream still holds its body open.
    const events = await readSse(res);
    await held;
    expect(upstream.holding).toBe(1);
    expect(events.at(-1)).toBe('[DONE]');
    expect(contentOf(events)).toBe('hello world');
    // The body was left to end rather than torn down: the next request comes on the same connection.
    upstream.release();
    const again = await readSse(await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: streamBody }));
    expect(contentOf(again)).toBe('again');
    const [first, second] = upstream.received.slice(-2);
    expect(second?.port).toBe(first?.port);
  });
});
