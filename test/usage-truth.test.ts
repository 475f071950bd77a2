import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { countTokens } from 'gpt-tokenizer';
import { estimate, type EstimateInput } from '../src/admission/estimate.js';
import { billedUsage } from '../src/chat/billed-usage.js';
import { parseConfig } from '../src/config/load.js';
import { tokenUsage } from '../src/ledger/pricing.js';
import { Catalog } from '../src/routing/catalog.js';
import { ScriptedUpstream, type Script } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { readSse } from './helpers/sse.js';

// Prices make costs easy to read: one token (prompt or completion) costs 0.001 credit.
const perToken = { prompt: '0.001', completion: '0.001' };
const CONTEXT = 100_000;

const answer = (usage: Record<string, number> | undefined, message: Record<string, unknown> = { content: 'ok' }) => ({
  id: 'up',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
  ...(usage ? { usage } : {}),
});
const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'up', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra });

interface ChatAnswer {
  id: string;
  usage: { prompt_tokens: number; completion_tokens: number; cost: number };
}
interface Err {
  error: { code: number; metadata: Record<string, unknown> };
}

describe('issue 7: the gateway charges what a request really costs', () => {
  const up = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', context_length: CONTEXT, endpoints: [{ provider: 'up', model: 'm', pricing: perToken }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  const ask = (key: string, body: Record<string, unknown>) => gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'u/m', ...body } });
  const generation = async (key: string, id: string) => {
    const res = await gw.fetch(`/api/v1/generation?id=${id}`, { token: key });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: Record<string, unknown> }).data;
  };
  const keyLimitRefusal = async (res: Response) => {
    expect(res.status).toBe(402);
    const body = (await res.json()) as Err;
    expect(body.error.metadata.limit_source).toBe('platform_key_limit');
    return body.error.metadata;
  };

  describe('issue 7 item 1: never change the client parameters', () => {
    it('a request without max_tokens is sent upstream without it, otherwise exactly as the client sent it', async () => {
      up.script({ kind: 'json', body: answer(usage(5, 1)) });
      const acct = await gw.account(100);
      const client = { messages: [{ role: 'user', content: 'hi' }], temperature: 0.3, top_p: 0.9, stop: ['x'], provider: { order: ['up'] }, plugins: [] };
      expect((await ask(acct.key, client)).status).toBe(200);
      const sent = up.received.at(-1)!.body;
      expect(sent).not.toHaveProperty('max_tokens');
      expect(sent).not.toHaveProperty('max_completion_tokens');
      // The client's body minus the gateway's own fields (the model is the endpoint's upstream name;
      // `stream: false` is the transport's explicit default).
      expect(sent).toEqual({ model: 'm', messages: client.messages, temperature: 0.3, top_p: 0.9, stop: ['x'], stream: false });
    });

    it('a request that sets both caps is estimated at the larger one, and both are forwarded as sent', async () => {
      up.script({ kind: 'json', body: answer(usage(5, 1)) });
      // The smaller cap (10 tokens) fits a 0.5 limit; the larger (1,000 tokens = 1.0) does not.
      const tight = await gw.account(100, { limit: 0.5 });
      const refused = await keyLimitRefusal(await ask(tight.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000, max_completion_tokens: 10 }));
      expect(refused.estimated_cost).toBeGreaterThanOrEqual(1);
      const refusedOther = await keyLimitRefusal(
        await ask(tight.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, max_completion_tokens: 1000 }),
      );
      expect(refusedOther.estimated_cost).toBeGreaterThanOrEqual(1);

      const roomy = await gw.account(100, { limit: 5 });
      expect((await ask(roomy.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000, max_completion_tokens: 10 })).status).toBe(200);
      expect(up.received.at(-1)!.body).toMatchObject({ max_tokens: 1000, max_completion_tokens: 10 });
    });
  });

  describe('issue 7 item 2: the estimate counts every billed input', () => {
    // Each shape is scripted with the prompt_tokens a real provider reports for it; a key whose
    // limit is below that cost must not admit it (it did: the estimate saw only the text).
    const bills = async (message: Record<string, unknown>, promptTokens: number) => {
      up.script({ kind: 'json', body: answer(usage(promptTokens, 1)) });
      const cost = (promptTokens + 1) * 0.001;
      const tight = await gw.account(100, { limit: cost * 0.9 });
      const metadata = await keyLimitRefusal(await ask(tight.key, { messages: [message], max_tokens: 1 }));
      // The estimate covers what the upstream bills.
      expect(metadata.estimated_cost as number).toBeGreaterThanOrEqual(cost);
      const before = up.received.length;
      // A key that covers the estimate is admitted and charged what the upstream billed.
      const roomy = await gw.account(100, { limit: (metadata.estimated_cost as number) + 0.01 });
      const res = await ask(roomy.key, { messages: [message], max_tokens: 1 });
      expect(res.status).toBe(200);
      expect(up.received.length).toBe(before + 1);
      expect(((await res.json()) as ChatAnswer).usage.cost).toBeCloseTo(cost, 9);
    };

    it('a prompt the byte bound overestimates is counted exactly before a refusal: a key that covers the exact estimate is admitted', async () => {
      const text = 'the quick brown fox jumps over the lazy dog '.repeat(50); // 2,200 bytes, ~450 tokens
      up.script({ kind: 'json', body: answer(usage(460, 1)) });
      const bound = (3 + 3 + Buffer.byteLength(text) + 1) * 0.001; // a token a byte, and the completion's one
      // Half the byte bound: refused by it, but well above what the prompt really counts (~0.46).
      const acct = await gw.account(100, { limit: bound / 2 });
      const res = await ask(acct.key, { messages: [{ role: 'user', content: text }], max_tokens: 1 });
      expect(res.status).toBe(200);
      expect(((await res.json()) as ChatAnswer).usage.cost).toBeCloseTo(0.461, 9);
      // A limit below the exact count is still refused.
      const tight = await gw.account(100, { limit: 0.1 });
      await keyLimitRefusal(await ask(tight.key, { messages: [{ role: 'user', content: text }], max_tokens: 1 }));
    });

    it('an image part (OpenAI bills a 2048×768 high-detail image 1,445 tokens inside prompt_tokens)', async () => {
      const image = { type: 'image_url', image_url: { url: 'https://example.test/cat.png', detail: 'high' } };
      await bills({ role: 'user', content: [{ type: 'text', text: 'what is this?' }, image] }, 1445 + 12);
    });

    it('an input_audio part (10 s of 8 kbit/s mp3; Gemini bills 32 tokens a second)', async () => {
      const data = Buffer.alloc(10_000, 7).toString('base64'); // 10 s at 1 KB/s
      await bills(
        {
          role: 'user',
          content: [
            { type: 'text', text: 'transcribe' },
            { type: 'input_audio', input_audio: { data, format: 'mp3' } },
          ],
        },
        320 + 10,
      );
    });

    it('a file part (a 2-page PDF of 3 KB; each page billed as text plus a page image)', async () => {
      const file_data = `data:application/pdf;base64,${Buffer.alloc(3_000, 1).toString('base64')}`;
      await bills(
        {
          role: 'user',
          content: [
            { type: 'text', text: 'summarise' },
            { type: 'file', file: { filename: 'a.pdf', file_data } },
          ],
        },
        2 * (1105 + 400) + 10,
      );
    });

    it('the legacy function_call on a message', async () => {
      const function_call = { name: 'save_note', arguments: JSON.stringify({ text: 'a longer note about the weather today '.repeat(120) }) };
      const message = { role: 'assistant', content: null, function_call };
      // What OpenAI bills for it: the name and the arguments, the message framing (3), the reply
      // priming (3) and the recipient marker (`to=functions.`, 3).
      await bills(message, countTokens(function_call.name) + countTokens(function_call.arguments) + 9);
    });

    it('the legacy functions list is part of the estimate', async () => {
      up.script({ kind: 'json', body: answer(usage(5, 1)) });
      const functions = [{ name: 'save_note', description: 'Saves a note. '.repeat(300), parameters: { type: 'object', properties: {} } }];
      const tight = await gw.account(100, { limit: 0.5 });
      await keyLimitRefusal(await ask(tight.key, { messages: [{ role: 'user', content: 'hi' }], functions, max_tokens: 1 }));
    });
  });

  describe('issue 7 item 3: charge the truth, distrust the impossible', () => {
    it('a completion count above the model context_length is not believed: the gateway counts what it delivered', async () => {
      up.script({ kind: 'json', body: answer(usage(5, 50_000_000), { content: 'Hello there, friend.' }) });
      const acct = await gw.account(100);
      const res = await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as ChatAnswer;
      expect(body.usage.completion_tokens).toBe(countTokens('Hello there, friend.'));
      expect(body.usage.cost).toBeLessThan(0.1);
      expect((await gw.admin.getAccount(acct.id)).balance).toBeGreaterThan(99.9);
      const g = await generation(acct.key, body.id);
      expect(g).toMatchObject({ usage_source: 'counted', tokens_completion: countTokens('Hello there, friend.') });
    });

    it('a prompt count above the context_length is not believed either', async () => {
      up.script({ kind: 'json', body: answer(usage(CONTEXT + 1, 3)) });
      const acct = await gw.account(100);
      const body = (await (await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).json()) as ChatAnswer;
      expect(body.usage.prompt_tokens).toBeLessThan(20);
      expect(await generation(acct.key, body.id)).toMatchObject({ usage_source: 'counted' });
    });

    it('a believable count is charged as reported, and the generation says it came from the upstream', async () => {
      up.script({ kind: 'json', body: answer(usage(5, 900)) });
      const acct = await gw.account(100);
      // More than the cap: a provider may bill reasoning beyond it, and that is charged (CONTRACT §7).
      const body = (await (await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).json()) as ChatAnswer;
      expect(body.usage.cost).toBeCloseTo(0.905, 9);
      expect(await generation(acct.key, body.id)).toMatchObject({ usage_source: 'upstream', tokens_completion: 900 });
    });

    it('without upstream usage, the generation says the gateway counted', async () => {
      up.script({ kind: 'json', body: answer(undefined) });
      const acct = await gw.account(100);
      const body = (await (await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).json()) as ChatAnswer;
      expect(await generation(acct.key, body.id)).toMatchObject({ usage_source: 'counted' });
    });
  });

  describe('issue 7 item 4: delivered output is always charged', () => {
    const reasoning = 'Let me think about this step by step, weighing every option carefully. '.repeat(40);

    it('a non-streamed answer without usage is charged for its reasoning text too', async () => {
      up.script({ kind: 'json', body: answer(undefined, { content: 'Yes.', reasoning }) });
      const acct = await gw.account(100);
      const body = (await (await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }] })).json()) as ChatAnswer;
      expect(body.usage.completion_tokens).toBeGreaterThanOrEqual(countTokens(reasoning) + countTokens('Yes.'));
    });

    it('reasoning_details text counts too', async () => {
      const details = [{ type: 'reasoning.text', text: reasoning }];
      up.script({ kind: 'json', body: answer(undefined, { content: 'Yes.', reasoning_details: details }) });
      const acct = await gw.account(100);
      const body = (await (await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }] })).json()) as ChatAnswer;
      expect(body.usage.completion_tokens).toBeGreaterThanOrEqual(countTokens(reasoning));
    });

    const words = Array.from({ length: 200 }, (_, i) => `word${i} `);
    const streamedWords = (script: Partial<Extract<Script, { kind: 'sse' }>>): Script => ({
      kind: 'sse',
      // An early chunk carries a partial usage figure (some providers send one with the first chunk).
      events: [chunk({ role: 'assistant', content: '' }, { usage: usage(5, 1) }), ...words.map((w) => chunk({ content: w }))],
      ...script,
    });

    it('a stream cut short by the upstream is charged for everything it delivered, not an early partial usage figure', async () => {
      const never = chunk({}, { choices: [], usage: usage(5, 200) });
      // The connection drops after every word was sent, before the final usage chunk.
      up.script(
        streamedWords({
          events: [chunk({ role: 'assistant', content: '' }, { usage: usage(5, 1) }), ...words.map((w) => chunk({ content: w })), never],
          destroyAfter: 1 + words.length,
        }),
      );
      const acct = await gw.account(100);
      const res = await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], stream: true });
      const events = await readSse(res);
      const last = events.at(-1) as { id: string; error?: unknown };
      expect(last.error).toBeDefined();
      const g = await generation(acct.key, last.id);
      expect(g.tokens_completion).toBeGreaterThanOrEqual(countTokens(words.join('')));
      expect(g.usage_source).toBe('counted');
    });

    it('a stream the client leaves is charged for everything it delivered, not an early partial usage figure', async () => {
      const final = chunk({}, { choices: [], usage: usage(5, 200) });
      // Every word is sent, then the upstream waits before its final usage chunk.
      up.script(
        streamedWords({
          events: [chunk({ role: 'assistant', content: '' }, { usage: usage(5, 1) }), ...words.map((w) => chunk({ content: w })), final],
          holdAfter: 1 + words.length,
        }),
      );
      const acct = await gw.account(100);
      const controller = new AbortController();
      const held = up.waitHeld();
      const res = await fetch(`${gw.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'u/m', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        signal: controller.signal,
      });
      const id = res.headers.get('x-generation-id') as string;
      await held;
      const reader = res.body!.getReader();
      let seen = '';
      while (!seen.includes(words.at(-1)!.trim())) seen += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const g = await vi.waitFor(async () => {
        const found = await gw.ledger.getGeneration(id);
        if (!found) throw new Error('not settled yet');
        return found;
      });
      up.release();
      expect(g).toMatchObject({ cancelled: true, usageSource: 'counted' });
      expect(g.tokensCompletion).toBeGreaterThanOrEqual(countTokens(words.join('')));
    });

    it('cut short: the larger of what was delivered and what the upstream reported; ended: the upstream, when believable', () => {
      const counted = () => ({ promptTokens: 9, completionTokens: 40 });
      const cut = (upstream: { promptTokens: number; completionTokens: number } | undefined) =>
        billedUsage({ upstream, counted, contextLength: 1000, endedNormally: false });
      expect(cut({ promptTokens: 5, completionTokens: 1 })).toEqual({ usage: { promptTokens: 5, completionTokens: 40, totalTokens: 45 }, source: 'counted' });
      // Reasoning the upstream billed but did not deliver as text still counts.
      expect(cut({ promptTokens: 5, completionTokens: 300 })).toEqual({ usage: { promptTokens: 5, completionTokens: 300 }, source: 'upstream' });
      expect(cut({ promptTokens: 5, completionTokens: 5000 })).toEqual({ usage: counted(), source: 'counted' });
      expect(cut(undefined)).toEqual({ usage: counted(), source: 'counted' });
      const ended = (upstream: { promptTokens: number; completionTokens: number }) =>
        billedUsage({ upstream, counted, contextLength: 1000, endedNormally: true });
      expect(ended({ promptTokens: 5, completionTokens: 1 })).toEqual({ usage: { promptTokens: 5, completionTokens: 1 }, source: 'upstream' });
      expect(ended({ promptTokens: 1001, completionTokens: 1 })).toEqual({ usage: counted(), source: 'counted' });
      // The context holds prompt and completion together: a sum of exactly the context is believed, one over it is not.
      expect(ended({ promptTokens: 600, completionTokens: 400 })).toEqual({ usage: { promptTokens: 600, completionTokens: 400 }, source: 'upstream' });
      expect(ended({ promptTokens: 600, completionTokens: 401 })).toEqual({ usage: counted(), source: 'counted' });
      expect(billedUsage({ upstream: tokenUsage(600, 10, 1001), counted, contextLength: 1000, endedNormally: true })).toEqual({
        usage: counted(),
        source: 'counted',
      });
    });

    it('a stream that ends normally is charged the upstream final usage', async () => {
      const final = chunk({}, { choices: [], usage: usage(5, 700) });
      up.script(
        streamedWords({ events: [chunk({ role: 'assistant', content: '' }, { usage: usage(5, 1) }), ...words.map((w) => chunk({ content: w })), final] }),
      );
      const acct = await gw.account(100);
      const events = await readSse(await ask(acct.key, { messages: [{ role: 'user', content: 'hi' }], stream: true }));
      expect(events.at(-1)).toBe('[DONE]');
      const last = events.at(-2) as { id: string; usage: { completion_tokens: number } };
      expect(last.usage.completion_tokens).toBe(700);
      expect(await generation(acct.key, last.id)).toMatchObject({ tokens_completion: 700, usage_source: 'upstream' });
    });
  });
});

describe('issue 7 item 2: per-model part figures, and a byte bound consistent with the exact count', () => {
  const catalog = new Catalog(
    parseConfig({
      providers: [{ id: 'p', type: 'demo' }],
      limits: { in_flight: { part_tokens: { image: 2000 } } },
      models: [
        { id: 'big', context_length: 100_000, endpoints: [{ provider: 'p', model: 'm', pricing: perToken }] },
        { id: 'own', context_length: 100_000, part_tokens: { image: 300 }, endpoints: [{ provider: 'p', model: 'm', pricing: perToken }] },
        { id: 'small', context_length: 1_000, endpoints: [{ provider: 'p', model: 'm', pricing: perToken }] },
      ],
    }),
  );
  const attemptsOf = (id: string) => catalog.get(id)!.endpoints.map((endpoint) => ({ model: catalog.get(id)!, endpoint }));
  const input = (id: string, messages: unknown[]): EstimateInput => ({
    attempts: attemptsOf(id),
    messages,
    sideText: '',
    addedPromptTokens: 0,
    completionTokens: 1,
    choices: 1,
    byokProviders: new Set(),
    byokFeeFraction: 0,
    pluginCharges: 0n,
  });
  const withImages = (n: number) => [
    {
      role: 'user',
      content: [{ type: 'text', text: 'hi' }, ...Array.from({ length: n }, () => ({ type: 'image_url', image_url: { url: 'https://x.test/i.png' } }))],
    },
  ];

  it('a model uses its own figures, else the defaults, and all parts count at most its context_length', () => {
    const text = estimate(input('big', withImages(0)), true).promptTokens;
    expect(estimate(input('big', withImages(2)), true).promptTokens).toBe(text + 4000);
    expect(estimate(input('own', withImages(2)), true).promptTokens).toBe(text + 600);
    expect(estimate(input('small', withImages(2)), true).promptTokens).toBe(text + 1000);
    // Defaults when nothing is configured: a file by reference counts the whole context.
    const defaults = new Catalog(
      parseConfig({ providers: [{ id: 'p', type: 'demo' }], models: [{ id: 'd', context_length: 50_000, endpoints: [{ provider: 'p', model: 'm' }] }] }),
    );
    expect(defaults.get('d')!.partTokens).toEqual({ image: 48_169, audio_per_kb: 32, file_per_kb: 3000, by_reference: null });
  });

  it('the byte bound is never below the exact count, for text, names, tool calls, function_call and parts alike', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 200 });
    const message = fc.record({
      role: fc.constantFrom('user', 'assistant', 'tool'),
      content: fc.oneof(
        text,
        fc.array(fc.oneof(fc.record({ type: fc.constant('text'), text }), fc.constant({ type: 'image_url', image_url: { url: 'u' } })), { maxLength: 3 }),
      ),
      name: fc.option(text, { nil: undefined }),
      function_call: fc.option(fc.record({ name: text, arguments: text }), { nil: undefined }),
      tool_calls: fc.option(
        fc.array(fc.record({ id: text, type: fc.constant('function'), function: fc.record({ name: text, arguments: text }) }), { maxLength: 2 }),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 4 }), (messages) => {
        const exact = estimate(input('big', messages), true);
        const bound = estimate(input('big', messages), false);
        expect(bound.promptTokens).toBeGreaterThanOrEqual(exact.promptTokens);
        expect(bound.credits).toBeGreaterThanOrEqual(exact.credits);
      }),
      { numRuns: 200 },
    );
  });
});
