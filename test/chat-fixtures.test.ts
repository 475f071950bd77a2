import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditsFromString, formatCredits } from '../src/ledger/money.js';
import { contentOf, readSse } from './helpers/sse.js';
import { fixtureChunks, fixtureJson, ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// Prices: 0.000001 per prompt token, 0.000002 per completion token. Expected costs worked out by hand
// from each recording's token counts (completion billed = max(completion, total − prompt)).
const wholeAnswers: Array<[string, number, number, string]> = [
  ['openai-text.json', 16, 363, '0.000742'],
  ['groq-text.json', 45, 607, '0.001259'],
  ['groq-tool-call.json', 218, 15, '0.000248'],
  ['deepseek-text.json', 13, 300, '0.000613'],
  ['mistral-text.json', 13, 434, '0.000881'],
  // xAI leaves 320 reasoning tokens out of completion_tokens (2) but counts them in total (334).
  ['xai-text.json', 12, 322, '0.000656'],
];

const streams: Array<[string, number, number, string]> = [
  ['openai-text.chunks.txt', 16, 300, '0.000616'],
  ['azure-model-router.1.chunks.txt', 15, 78, '0.000171'],
  ['groq-text.chunks.txt', 45, 662, '0.001369'],
  ['groq-tool-call.chunks.txt', 210, 15, '0.00024'],
  ['deepseek-text.chunks.txt', 13, 400, '0.000813'],
  ['deepseek-reasoning.chunks.txt', 18, 219, '0.000456'],
  ['mistral-text.chunks.txt', 13, 8, '0.000029'],
  ['xai-text.chunks.txt', 12, 342, '0.000696'],
];

describe('relaying and charging recorded provider answers', () => {
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const baseUrl = await upstream.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: baseUrl, api_key: 'upstream-secret-key' }],
      models: [{ id: 'test/model', endpoints: [{ provider: 'up', model: 'upstream-model', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  for (const [file, prompt, completion, cost] of wholeAnswers) {
    it(`charges ${file} at the upstream's token counts`, async () => {
      const recorded = fixtureJson(file) as { choices: Array<{ message: Record<string, unknown> }> };
      upstream.script({ kind: 'json', body: recorded });
      const acct = await gw.account(1);
      const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'test/model', messages: [{ role: 'user', content: 'hi' }] } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, any>;
      expect(body.id).toMatch(/^gen-/);
      expect(res.headers.get('x-generation-id')).toBe(body.id);
      expect(body.model).toBe('test/model');
      expect(body.provider).toBe('up');
      expect(body.object).toBe('chat.completion');
      expect(body.choices[0].message.content ?? null).toEqual(recorded.choices[0]?.message.content ?? null);
      expect(body.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, is_byok: false });
      expect(String(body.usage.cost)).toBe(cost);
      // The upstream got its own model name and the provider's key.
      const sent = upstream.received.at(-1);
      expect(sent?.body.model).toBe('upstream-model');
      expect(sent?.headers.authorization).toBe('Bearer upstream-secret-key');

      const account = await gw.admin.getAccount(acct.id);
      expect(String(account.total_usage)).toBe(cost);
      expect(String(account.balance)).toBe(formatCredits(creditsFromString('1') - creditsFromString(cost)));
      const gen = await gw.ledger.getGeneration(body.id);
      expect(gen).toMatchObject({ tokensPrompt: prompt, tokensCompletion: completion, streamed: false, cancelled: false });
    });
  }

  it('sends a whole answer as its UTF-8 bytes, whether it is ASCII or not, with their count as its Content-Length', async () => {
    const acct = await gw.account(1);
    for (const content of ['plain ASCII text', 'naïve café, 日本語, 👋 and a lone \ud800 surrogate']) {
      const answer = {
        id: 'up',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      };
      upstream.script({ kind: 'json', body: answer });
      const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'test/model', messages: [{ role: 'user', content: 'hi' }] } });
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status).toBe(200);
      expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
      // (The upstream writes the lone surrogate as JSON.stringify does, as an escape, which is relayed as written.)
      expect((JSON.parse(bytes.toString('utf8')) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe(content);
    }
  });

  for (const [file, prompt, completion, cost] of streams) {
    it(`relays ${file} as SSE with usage and cost in the last chunk, and charges it once`, async () => {
      const events = fixtureChunks(file);
      upstream.script({ kind: 'sse', events });
      const acct = await gw.account(1);
      const res = await gw.fetch('/api/v1/chat/completions', {
        token: acct.key,
        body: { model: 'test/model', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const out = await readSse(res);
      expect(out.at(-1)).toBe('[DONE]');
      const last = out.at(-2) as Record<string, any>;
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
      expect(String(last.usage.cost)).toBe(cost);
      // Every relayed chunk is the gateway's: one id, the public model, no upstream usage or null fingerprint.
      const chunks = out.filter((e): e is Record<string, any> => e !== '[DONE]');
      const id = res.headers.get('x-generation-id');
      for (const c of chunks) {
        expect(c.id).toBe(id);
        expect(c.model).toBe('test/model');
        expect(c.object).toBe('chat.completion.chunk');
        expect(c.system_fingerprint).not.toBeNull();
        for (const choice of c.choices) expect(choice).toHaveProperty('finish_reason');
      }
      expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true);
      // The text is relayed unchanged.
      const upstreamText = events
        .map((e) => JSON.parse(e) as { choices?: Array<{ delta?: { content?: string | null } }> })
        .flatMap((e) => e.choices ?? [])
        .map((c) => c.delta?.content ?? '')
        .join('');
      expect(contentOf(out)).toBe(upstreamText);
      expect(upstream.received.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });

      const account = await gw.admin.getAccount(acct.id);
      expect(String(account.total_usage)).toBe(cost);
      const gen = await gw.ledger.getGeneration(id as string);
      expect(gen).toMatchObject({ tokensPrompt: prompt, tokensCompletion: completion, streamed: true, cancelled: false });
      expect(String(Number(gen?.totalCost) / 1e9)).toBe(cost);
    });
  }
});
