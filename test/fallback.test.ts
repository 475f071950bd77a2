import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, type Script } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

const ok = (who: string): Script => ({
  kind: 'json',
  body: {
    id: 'u',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: `from ${who}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  },
});
const limited = (code: string, retryAfterSeconds?: number): Script => ({
  kind: 'json',
  status: 429,
  body: { error: { code, message: 'slow down' } },
  ...(retryAfterSeconds === undefined ? {} : { headers: { 'retry-after': String(retryAfterSeconds) } }),
});
const failing: Script = { kind: 'json', status: 500, body: { error: { message: 'internal server error' } } };
const chunk = (content: string) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const price = { prompt: '0.000001', completion: '0.000002' };

interface Err {
  error: { code: number; message: string; metadata: Record<string, any> };
}

describe('provider and model fallback (spec: Errors / 429 origin B, Events)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
  const a = new ScriptedUpstream();
  const b = new ScriptedUpstream();
  const c = new ScriptedUpstream();
  let gw: TestGateway;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    const [ua, ub, uc] = await Promise.all([a.start(), b.start(), c.start()]);
    const fastTimeouts = { first_byte: 300, idle: 300, total: 5000 };
    gw = await startTestGateway(
      {
        providers: [
          { id: 'alpha', type: 'openai', base_url: ua, timeouts_ms: fastTimeouts },
          { id: 'beta', type: 'openai', base_url: ub, timeouts_ms: fastTimeouts },
          { id: 'gamma', type: 'openai', base_url: uc, timeouts_ms: { first_byte: 5000, idle: 5000, total: 400 } },
        ],
        models: [
          {
            id: 'm/one',
            endpoints: [
              { provider: 'alpha', model: 'one', pricing: price },
              { provider: 'beta', model: 'one', pricing: price },
            ],
          },
          { id: 'm/two', endpoints: [{ provider: 'gamma', model: 'two', pricing: price }] },
        ],
      },
      clock,
    );
    ({ key, id: accountId } = await gw.account(10));
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  });
  beforeEach(() => clock.advance(3_600_000)); // every test starts with no provider cooling down

  const ask = (body: Record<string, unknown> = {}) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'm/one', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], ...body } });
  const servedBy = async (res: Response) => {
    expect(res.status).toBe(200);
    return ((await res.json()) as { provider: string; model: string }).provider;
  };

  it('an upstream 429 moves on to the next provider of the same model', async () => {
    a.script(limited('rate_limit_exceeded'));
    b.script(ok('beta'));
    expect(await servedBy(await ask())).toBe('beta');
  });

  it('a 5xx, a refused connection and a first-byte timeout each move on too', async () => {
    for (const script of [failing, { kind: 'destroy' } as Script, { kind: 'hang' } as Script]) {
      a.script(script);
      b.script(ok('beta'));
      expect(await servedBy(await ask())).toBe('beta');
    }
  });

  it('a stream that stalls before any output (idle timeout) moves on', async () => {
    a.script({ kind: 'sse', events: [chunk('never')], holdAfter: 0 });
    b.script({ kind: 'sse', events: [chunk('from beta')] });
    const res = await ask({ stream: true });
    expect(contentOf(await readSse(res))).toBe('from beta');
    a.release();
  });

  it("when every provider of the model fails, the request's models list is tried next", async () => {
    a.script(failing);
    b.script(failing);
    c.script(ok('gamma'));
    const res = await ask({ models: ['m/two'] });
    const body = (await res.json()) as { provider: string; model: string };
    expect(body).toMatchObject({ provider: 'gamma', model: 'm/two' });
  });

  it('allow_fallbacks: false tries only the first provider', async () => {
    a.script(failing);
    b.script(ok('beta'));
    const before = b.received.length;
    const res = await ask({ provider: { allow_fallbacks: false } });
    expect(res.status).toBe(502);
    expect(b.received.length).toBe(before);
  });

  it('all exhausted by rate limits: 429 with provider_name, provider_code, and Retry-After (the smallest hint) when every provider gave one', async () => {
    a.script(limited('alpha_busy', 30));
    b.script(limited('beta_busy', 7));
    const res = await ask();
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    const body = (await res.json()) as Err;
    expect(body.error.metadata).toMatchObject({ provider_name: 'alpha', provider_code: 'alpha_busy' });
    expect(res.headers.get('x-ratelimit-limit')).toBeNull(); // origin B: not a platform limit
  });

  it('no Retry-After when some provider gave no hint; 429 still when any provider rate limited', async () => {
    a.script(limited('alpha_busy'));
    b.script(failing);
    const res = await ask();
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBeNull();
  });

  it('a provider that answered 429 with a hint is skipped for that long, then tried again', async () => {
    a.script(limited('alpha_busy', 20));
    b.script(ok('beta'));
    expect(await servedBy(await ask())).toBe('beta');
    const reached = a.received.length;
    a.script(ok('alpha'));
    expect(await servedBy(await ask())).toBe('beta'); // alpha skipped: it asked for 20 s
    expect(a.received.length).toBe(reached);
    b.script(limited('beta_busy', 5));
    const both = await ask(); // alpha cooling (hint), beta rate limits (hint): 429 with the smallest wait
    expect(both.status).toBe(429);
    expect(both.headers.get('retry-after')).toBe('5');
    clock.advance(20_000);
    expect(await servedBy(await ask())).toBe('alpha');
  });

  it('other total failures are 502 with the same detail', async () => {
    a.script(failing);
    b.script({ kind: 'destroy' });
    const res = await ask();
    expect(res.status).toBe(502);
    const body = (await res.json()) as Err;
    expect(body.error.metadata.attempts).toHaveLength(2);
    expect(body.error.metadata.attempts[0]).toMatchObject({ provider: 'alpha', status: 500 });
  });

  it('an upstream at capacity (a 529, a 503 saying it is overloaded) is origin B of the 429 once every provider is exhausted', async () => {
    a.script({ kind: 'json', status: 503, body: { error: { type: 'overloaded_error', message: 'Overloaded' } } });
    b.script({ kind: 'json', status: 529, body: { error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const res = await ask();
    expect(res.status).toBe(429);
    expect(((await res.json()) as Err).error.metadata).toMatchObject({ provider_name: 'alpha', provider_code: 'overloaded_error' });
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    // A 503 that asks to come back later is at capacity too; one that says neither is a failure (502).
    a.script({ kind: 'json', status: 503, headers: { 'retry-after': '3' }, body: { error: { message: 'try later' } } });
    b.script({ kind: 'json', status: 503, headers: { 'retry-after': '9' }, body: 'Service Unavailable' });
    const later = await ask();
    expect(later.status).toBe(429);
    expect(later.headers.get('retry-after')).toBe('3');
    clock.advance(10_000); // past both cooldowns
    a.script({ kind: 'json', status: 503, body: 'Service Unavailable' });
    b.script({ kind: 'json', status: 503, body: { error: { message: 'upstream connect error' } } });
    expect((await ask()).status).toBe(502);
  });

  it("after output reached the client there is no fallback: the spec's error event ends the stream, charged once for what was delivered", async () => {
    a.script({ kind: 'sse', events: [chunk('partial '), chunk('answer'), chunk('never')], destroyAfter: 2 });
    b.script(ok('beta'));
    const reachedB = b.received.length;
    const before = (await gw.admin.getAccount(accountId)).total_usage;
    const res = await ask({ stream: true });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(contentOf(events)).toBe('partial answer');
    const last = events.at(-1) as Record<string, any>;
    expect(last.error).toMatchObject({ code: 502 });
    expect(last.choices[0].finish_reason).toBe('error');
    expect(events).not.toContain('[DONE]');
    expect(b.received.length).toBe(reachedB);
    const gen = await gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect(gen?.finishReason).toBe('error');
    const after = (await gw.admin.getAccount(accountId)).total_usage;
    expect(BigInt(Math.round((after - before) * 1e9))).toBe(gen?.totalCost);
  });

  it('a rate limit mid-stream is the error event with code 429 and the provider code', async () => {
    a.script({ kind: 'sse', events: [chunk('hello '), JSON.stringify({ error: { code: 'rate_limit_exceeded', message: 'too fast' } })], done: false });
    const events = await readSse(await ask({ stream: true }));
    expect((events.at(-1) as Record<string, any>).error).toMatchObject({ code: 429, metadata: { provider_code: 'rate_limit_exceeded' } });
    // Anthropic's overloaded_error mid-stream: at capacity, the same 429 event.
    a.script({ kind: 'sse', events: [chunk('hello '), JSON.stringify({ error: { type: 'overloaded_error', message: 'Overloaded' } })], done: false });
    const overloaded = await readSse(await ask({ stream: true }));
    expect((overloaded.at(-1) as Record<string, any>).error).toMatchObject({ code: 429, metadata: { provider_code: 'overloaded_error' } });
  });

  it('the total timeout ends a stream that goes on too long', async () => {
    c.script({ kind: 'sse', events: [chunk('slow '), chunk('never')], holdAfter: 1 });
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: key,
      body: { model: 'm/two', stream: true, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    const events = await readSse(res);
    expect(contentOf(events)).toBe('slow ');
    expect((events.at(-1) as Record<string, any>).error.metadata.error_type).toBe('timeout');
    c.release();
  });

  it('the official openai client receives the mid-stream error event as the end of its stream', async () => {
    a.script({ kind: 'sse', events: [chunk('one '), chunk('two '), chunk('three')], destroyAfter: 2 });
    const client = new OpenAI({ baseURL: `${gw.base}/api/v1`, apiKey: key, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'm/one', stream: true, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
    let text = '';
    const err = await (async () => {
      for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    })().catch((e: unknown) => e);
    expect(text).toBe('one two ');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toMatch(/upstream stream ended with an error/);
  });
});
