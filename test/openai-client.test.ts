import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { caught } from './helpers/caught.js';

const request = { model: 'demo/echo', messages: [{ role: 'user' as const, content: 'ping from the openai client' }] };

describe('the official openai client against the gateway (demo provider)', () => {
  let gw: TestGateway;
  const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.base}/api/v1`, apiKey, maxRetries: 0 });

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('returns a non-streamed completion with usage and cost, and charges the key exactly that cost', async () => {
    const { key } = await gw.account(10);
    const completion = await client(key).chat.completions.create(request);

    expect(completion.id).toMatch(/^gen-/);
    expect(completion.model).toBe('demo/echo');
    expect(completion.choices[0]?.message.content).toContain('You said: ping from the openai client');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    const usage = completion.usage;
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.total_tokens).toBe((usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0));
    // OpenRouter's extension: the openai typings have no usage.cost.
    const cost = (completion as any).usage.cost as number;
    expect(typeof cost).toBe('number');
    expect(cost).toBeGreaterThan(0);

    const res = await gw.fetch('/api/v1/key', { token: key });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { usage: number } };
    expect(data.usage).toBe(cost);
  });

  it('streams the same text as the whole answer, with usage and cost on the final chunk', async () => {
    const { key } = await gw.account(10);
    const openai = client(key);
    const whole = await openai.chat.completions.create(request);

    const stream = await openai.chat.completions.create({ ...request, stream: true });
    let text = '';
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
    }

    expect(text).toBe(whole.choices[0]?.message.content);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({
      prompt_tokens: whole.usage?.prompt_tokens,
      completion_tokens: whole.usage?.completion_tokens,
    });
    // OpenRouter's extension: the openai typings have no usage.cost.
    expect((last as any).usage.cost).toBe((whole as any).usage.cost);
    expect(chunks.slice(0, -1).every((c) => c.usage == null)).toBe(true);
  });

  it('rejects an unknown model with BadRequestError (400) naming the model', async () => {
    const { key } = await gw.account(10);
    const err = await caught(client(key).chat.completions.create({ ...request, model: 'nobody/no-such-model' }));

    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.message).toContain('nobody/no-such-model');
    expect(e.error).toMatchObject({ code: 400, message: expect.stringContaining('nobody/no-such-model') });
  });

  it('rejects an invalid key with AuthenticationError (401)', async () => {
    const err = await caught(client('sk-tg-v1-not-a-real-key').chat.completions.create(request));

    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const e = err as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(e.status).toBe(401);
    expect(e.error).toMatchObject({ code: 401, message: expect.any(String) });
    expect((e.error as { message: string }).message.length).toBeGreaterThan(0);
  });
});

describe('the official openai client when every provider fails', () => {
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const baseUrl = await upstream.start();
    upstream.script({ kind: 'json', status: 500, body: { error: { message: 'boom' } } });
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: baseUrl, api_key: 'upstream-secret-key' }],
      models: [{ id: 'test/model', endpoints: [{ provider: 'up', model: 'upstream-model', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('surfaces 502 as InternalServerError and charges nothing', async () => {
    const { id, key } = await gw.account(10);
    const openai = new OpenAI({ baseURL: `${gw.base}/api/v1`, apiKey: key, maxRetries: 0 });
    const err = await caught(openai.chat.completions.create({ ...request, model: 'test/model' }));

    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    const e = err as InstanceType<typeof OpenAI.InternalServerError>;
    expect(e.status).toBe(502);
    expect(e.error).toMatchObject({ code: 502, message: expect.any(String) });
    expect(upstream.received.length).toBeGreaterThan(0);
    expect(upstream.received.at(-1)?.body.model).toBe('upstream-model');

    const account = await gw.admin.getAccount(id);
    expect(account.total_usage).toBe(0);
  });
});
