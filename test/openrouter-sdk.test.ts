import { OpenRouter } from '@openrouter/sdk';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import * as errors from '@openrouter/sdk/models/errors';
import type { SendChatCompletionRequestResponse } from '@openrouter/sdk/models/operations';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { fixtureChunks, fixtureJson, ScriptedUpstream } from './helpers/scripted-upstream.js';
import { caught } from './helpers/caught.js';

// Every call below goes through the SDK's own response schemas: a field the gateway leaves out or
// sends with the wrong type makes the call throw ResponseValidationError (or a ZodError mid-stream).

function wholeAnswer(res: SendChatCompletionRequestResponse): ChatResult {
  if (res instanceof ReadableStream) throw new Error('expected a whole answer, got a stream');
  return res;
}

async function allChunks(res: SendChatCompletionRequestResponse): Promise<ChatStreamChunk[]> {
  if (!(res instanceof ReadableStream)) throw new Error('expected a stream, got a whole answer');
  const chunks: ChatStreamChunk[] = [];
  for await (const chunk of res) chunks.push(chunk);
  return chunks;
}

const messages = [{ role: 'user' as const, content: 'hello from the OpenRouter SDK' }];

describe('the official @openrouter/sdk against the gateway (demo provider)', () => {
  let gw: TestGateway;
  const sdk = (apiKey: string) => new OpenRouter({ serverURL: `${gw.base}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('apiKeys.getCurrentKeyMetadata parses and reports the key', async () => {
    const { key } = await gw.account(25);
    const { data } = await sdk(key).apiKeys.getCurrentKeyMetadata();

    expect(data.label).toBe(`${key.slice(0, 'sk-tg-v1-'.length + 3)}...${key.slice(-3)}`);
    expect(data).toMatchObject({
      limit: null,
      limitRemaining: null,
      limitReset: null,
      usage: 0,
      usageDaily: 0,
      usageWeekly: 0,
      usageMonthly: 0,
      byokUsage: 0,
      includeByokInLimit: false,
      // 25 credits purchased: at or above the default free-tier threshold (10), so the higher daily ceiling.
      isFreeTier: true,
      freeModelDailyRequests: { used: 0, limit: 1000, remaining: 1000 },
      isManagementKey: false,
      isProvisioningKey: false,
      creatorUserId: null,
      allowedDataRegions: ['global'],
      rateLimit: { requests: -1, interval: '10s', note: 'deprecated' },
    });
    expect(typeof data.isFreeTier).toBe('boolean');
  });

  it('credits.getCredits reports the purchase, then the usage after a paid request', async () => {
    const { key } = await gw.account(7.5);
    const client = sdk(key);
    const before = await client.credits.getCredits();
    expect(before.data).toEqual({ totalCredits: 7.5, totalUsage: 0 });

    const answer = wholeAnswer(await client.chat.send({ chatRequest: { model: 'demo/echo', messages } }));
    const cost = answer.usage?.cost;
    expect(cost).toBeGreaterThan(0);

    const after = await client.credits.getCredits();
    expect(after.data.totalCredits).toBe(7.5);
    expect(after.data.totalUsage).toBe(cost);
  });

  it('models.list returns the configured models with string prices', async () => {
    const { key } = await gw.account(1);
    const page = await sdk(key).models.list();
    const byId = new Map(page.result.data.map((m) => [m.id, m]));

    expect([...byId.keys()].sort()).toEqual(['demo/echo', 'demo/echo:free']);
    expect(page.result.totalCount).toBe(2);
    expect(byId.get('demo/echo')?.pricing).toMatchObject({ prompt: '0.000001', completion: '0.000002' });
    expect(byId.get('demo/echo:free')?.pricing).toMatchObject({ prompt: '0', completion: '0' });
    expect(byId.get('demo/echo')?.contextLength).toBe(8192);
  });

  it('chat.send (not streamed) returns content and usage with cost', async () => {
    const { key } = await gw.account(10);
    const answer = wholeAnswer(await sdk(key).chat.send({ chatRequest: { model: 'demo/echo', messages } }));

    expect(answer.id).toMatch(/^gen-/);
    expect(answer.model).toBe('demo/echo');
    expect(answer.choices[0]?.message.content).toContain('You said: hello from the OpenRouter SDK');
    expect(answer.choices[0]?.finishReason).toBe('stop');
    expect(answer.usage?.promptTokens).toBeGreaterThan(0);
    expect(answer.usage?.completionTokens).toBeGreaterThan(0);
    expect(answer.usage?.cost).toBeGreaterThan(0);
  });

  it('chat.send (streamed) yields the same text, and the usage chunk carries the cost', async () => {
    const { key } = await gw.account(10);
    const client = sdk(key);
    const whole = wholeAnswer(await client.chat.send({ chatRequest: { model: 'demo/echo', messages } }));

    const chunks = await allChunks(await client.chat.send({ chatRequest: { model: 'demo/echo', messages, stream: true } }));
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(chunks.every((c) => c.error === undefined)).toBe(true);

    const withUsage = chunks.filter((c) => c.usage);
    expect(withUsage).toHaveLength(1);
    const last = withUsage[0];
    expect(last).toBe(chunks.at(-1));
    expect(last?.usage).toMatchObject({ promptTokens: whole.usage?.promptTokens, completionTokens: whole.usage?.completionTokens });
    expect(last?.usage?.cost).toBe(whole.usage?.cost);
  });

  it('generations.getGeneration describes the request the chat answer named', async () => {
    const { key } = await gw.account(10);
    const client = sdk(key);
    const answer = wholeAnswer(await client.chat.send({ chatRequest: { model: 'demo/echo', messages } }));

    const { data } = await client.generations.getGeneration({ id: answer.id });
    expect(data).toMatchObject({
      id: answer.id,
      model: 'demo/echo',
      providerName: 'demo',
      streamed: false,
      cancelled: false,
      isByok: false,
      finishReason: 'stop',
      tokensPrompt: answer.usage?.promptTokens,
      tokensCompletion: answer.usage?.completionTokens,
    });
    expect(data.totalCost).toBe(answer.usage?.cost);
    // The answer also says where its token counts came from (usage_source), and the SDK still parses it.
    const raw = (await (await gw.fetch(`/api/v1/generation?id=${answer.id}`, { token: key })).json()) as { data: Record<string, unknown> };
    expect(raw.data.usage_source).toBe('upstream');
  });

  it('an unknown generation id is NotFoundResponseError (404)', async () => {
    const { key } = await gw.account(1);
    const err = await caught(sdk(key).generations.getGeneration({ id: 'gen-0-doesnotexist' }));

    expect(err).toBeInstanceOf(errors.NotFoundResponseError);
    const e = err as errors.NotFoundResponseError;
    expect(e.statusCode).toBe(404);
    expect(e.error.code).toBe(404);
    expect(e.message).toContain('gen-0-doesnotexist');
  });

  it('a bad key on chat is UnauthorizedResponseError (401)', async () => {
    const err = await caught(sdk('sk-tg-v1-not-a-real-key').chat.send({ chatRequest: { model: 'demo/echo', messages } }));

    expect(err).toBeInstanceOf(errors.UnauthorizedResponseError);
    const e = err as errors.UnauthorizedResponseError;
    expect(e.statusCode).toBe(401);
    expect(e.error.code).toBe(401);
    expect(e.error.message.length).toBeGreaterThan(0);
  });
});

describe('the official @openrouter/sdk against recorded upstream answers and failures', () => {
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;
  const sdk = (apiKey: string) => new OpenRouter({ serverURL: `${gw.base}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'rec/model', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('parses every recorded whole answer (Mistral sends tool_calls: null, which the SDK refuses unless the gateway drops it)', async () => {
    const { key } = await gw.account(5);
    for (const file of ['openai-text.json', 'groq-text.json', 'groq-tool-call.json', 'deepseek-text.json', 'mistral-text.json', 'xai-text.json']) {
      upstream.script({ kind: 'json', body: fixtureJson(file) });
      const res = wholeAnswer(await sdk(key).chat.send({ chatRequest: { model: 'rec/model', messages } }));
      expect(res.usage?.cost, file).toBeGreaterThan(0);
    }
  });

  it('parses every recorded stream', async () => {
    const { key } = await gw.account(5);
    for (const file of [
      'openai-text.chunks.txt',
      'azure-model-router.1.chunks.txt',
      'groq-text.chunks.txt',
      'deepseek-reasoning.chunks.txt',
      'mistral-text.chunks.txt',
      'xai-text.chunks.txt',
    ]) {
      upstream.script({ kind: 'sse', events: fixtureChunks(file) });
      const chunks = await allChunks(await sdk(key).chat.send({ chatRequest: { model: 'rec/model', messages, stream: true } }));
      expect(chunks.at(-1)?.usage?.cost, file).toBeGreaterThan(0);
    }
  });

  it('yields the mid-stream error event as a chunk with error and finish_reason "error"', async () => {
    const { key } = await gw.account(5);
    const chunk = (content: string) =>
      JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    upstream.script({ kind: 'sse', events: [chunk('one '), chunk('two '), chunk('three')], destroyAfter: 2 });
    const chunks = await allChunks(await sdk(key).chat.send({ chatRequest: { model: 'rec/model', messages, stream: true } }));
    const last = chunks.at(-1);
    expect(last?.error).toMatchObject({ code: 502 });
    expect(last?.choices[0]?.finishReason).toBe('error');
  });
});
