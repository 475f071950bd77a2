import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { objectMembers, spliceObject } from '../src/chat/json-members.js';
import {
  chunkHead,
  answerWriter,
  normalizeAnswer,
  normalizeChunk,
  relayedChunkText,
  usageChunk,
  usageChunkText,
  usageBody,
  usageText,
  type Served,
} from '../src/chat/normalize.js';
import type { ChatUsageJson } from '../src/chat/answer-schemas.js';
import { jsonString } from '../src/json-string.js';
import { streamEvent } from '../src/providers/stream-event.js';
import { utf8Bytes, utf8Text } from '../src/utf8-bytes.js';
import { fixtureChunks, fixtureJson } from './helpers/scripted-upstream.js';

// Issue 9: answers are relayed by splicing the upstream's text. Whatever the text, the spliced answer
// must parse to exactly what the reference (parse, rebuild, serialise) produces.

const served: Served = { id: 'gen-1-abc', model: 'pub/model "quoted"', provider: 'up', created: 1_700_000_000 };

/** JSON texts of objects, written with and without whitespace, strings with escapes and unicode. */
const jsonValue = fc.jsonValue({ maxDepth: 4 });
const objectText = fc
  .tuple(fc.dictionary(fc.string({ maxLength: 8 }), jsonValue, { maxKeys: 8 }), fc.constantFrom(undefined, 1, '\t'))
  // The value is the text read back (JSON has no -0, nor undefined).
  .map(([o, indent]) => {
    const text = JSON.stringify(o, null, indent);
    return { value: JSON.parse(text) as Record<string, unknown>, text };
  });

describe('issue 9: splicing JSON text instead of rebuilding it', () => {
  it('objectMembers finds every top-level member, whatever the values hold', () => {
    fc.assert(
      fc.property(objectText, ({ value, text }) => {
        const members = objectMembers(text);
        expect(members).toBeDefined();
        const found = Object.fromEntries((members ?? []).map((m) => [m.key, JSON.parse(text.slice(m.valueStart, m.end)) as unknown]));
        expect(found).toEqual(value);
      }),
      { numRuns: 500 },
    );
  });

  it('spliceObject drops the members it is told to and puts head and tail around the rest', () => {
    fc.assert(
      fc.property(objectText, fc.array(fc.string({ maxLength: 8 })), ({ value, text }, dropped) => {
        const drop = new Set(dropped);
        const members = objectMembers(text) ?? [];
        const out = JSON.parse(spliceObject(text, members, '"__head":1', (k) => drop.has(k), '"__tail":2')) as Record<string, unknown>;
        const expected: Record<string, unknown> = { __head: 1 };
        for (const [k, v] of Object.entries(value)) if (!drop.has(k)) expected[k] = v;
        expected.__tail = 2;
        expect(out).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('is not an object: no members', () => {
    for (const text of ['[]', '"x"', '1', 'null', '']) expect(objectMembers(text)).toBeUndefined();
  });

  it('every recorded stream chunk is relayed as the reference relays it', () => {
    const files = ['openai-text', 'azure-model-router.1', 'groq-text', 'groq-tool-call', 'deepseek-text', 'deepseek-reasoning', 'mistral-text', 'xai-text'];
    let spliced = 0;
    for (const file of files) {
      for (const text of fixtureChunks(`${file}.chunks.txt`)) {
        const chunk = JSON.parse(text) as Record<string, unknown>;
        const out = relayedChunkText(streamEvent(utf8Bytes(text), chunk), served, chunkHead(served));
        const reference = normalizeChunk(chunk, served);
        expect(out === undefined ? undefined : JSON.parse(utf8Text(out)), `${file}: ${text.slice(0, 80)}`).toEqual(reference);
        if (out !== undefined && !out.startsWith('{"id"')) throw new Error('the gateway id comes first');
        spliced++;
      }
    }
    expect(spliced).toBeGreaterThan(1000);
  });

  it('every recorded whole answer is relayed as the reference relays it', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5, is_byok: false };
    for (const file of ['openai-text', 'groq-text', 'groq-tool-call', 'deepseek-text', 'mistral-text', 'xai-text']) {
      const body = fixtureJson(`${file}.json`) as Record<string, unknown>;
      for (const text of [JSON.stringify(body), JSON.stringify(body, null, 2)]) {
        expect(JSON.parse(answerWriter(text, body, served)(usage)), file).toEqual(normalizeAnswer(body, served, usage));
      }
    }
  });

  it('a whole answer that must be rebuilt (a null the schema forbids, a key written twice) is relayed as the reference relays it', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5, is_byok: false };
    const texts = [
      '{"id":"u","choices":[{"index":0,"message":{"role":"assistant","content":"x","tool_calls":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":9}}',
      '{"id":"u","model":"a","model":"b","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}',
    ];
    for (const text of texts) {
      const body = JSON.parse(text) as Record<string, unknown>;
      expect(JSON.parse(answerWriter(text, body, served)(usage))).toEqual(normalizeAnswer(body, served, usage));
    }
  });

  it("leaves out of a whole answer what OpenRouter's schema has no room for: Groq's own usage, a null name, detail counts that are not counts", () => {
    const text = JSON.stringify({
      id: 'u',
      choices: [{ index: 0, message: { role: 'assistant', content: 'x', name: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 0.5 }, completion_tokens_details: { reasoning_tokens: 2 } },
      x_groq: { id: 'g', usage: { prompt_tokens: 9, completion_tokens: 9 } },
    });
    const body = JSON.parse(text) as Record<string, any>;
    const usage = usageBody({ promptTokens: 1, completionTokens: 1, totalTokens: 2 }, 5n, false, body.usage);
    expect(usage).not.toHaveProperty('prompt_tokens_details');
    expect(usage.completion_tokens_details).toEqual({ reasoning_tokens: 2 });
    const out = JSON.parse(answerWriter(text, body, served)(usage)) as Record<string, any>;
    expect(out).not.toHaveProperty('x_groq');
    expect(out.choices[0].message).toEqual({ role: 'assistant', content: 'x' });
    const spliced = text.replace(',"name":null', '');
    expect(JSON.parse(answerWriter(spliced, JSON.parse(spliced), served)(usage))).not.toHaveProperty('x_groq');
  });

  it("leaves out every null that OpenRouter's schema allows only absent, of a whole answer's message and of a chunk's delta", () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5, is_byok: false };
    for (const field of ['tool_calls', 'reasoning_details', 'images', 'audio', 'function_call', 'name']) {
      const answer = { id: 'u', choices: [{ index: 0, message: { role: 'assistant', content: 'x', [field]: null }, finish_reason: 'stop' }] };
      const out = JSON.parse(answerWriter(JSON.stringify(answer), answer, served)(usage)) as { choices: Array<{ message: unknown }> };
      expect(out.choices[0]?.message, field).toEqual({ role: 'assistant', content: 'x' });
      const chunk = {
        id: 'u',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [{ index: 0, delta: { content: 'x', [field]: null }, finish_reason: null }],
      };
      const relayed = relayedChunkText(streamEvent(utf8Bytes(JSON.stringify(chunk)), chunk), served, chunkHead(served));
      expect((JSON.parse(utf8Text(relayed ?? utf8Bytes('{}'))) as { choices: Array<{ delta: unknown }> }).choices[0]?.delta, field).toEqual({ content: 'x' });
    }
  });

  it('chunks of any shape are relayed as the reference relays them', () => {
    const delta = fc.record(
      {
        role: fc.constantFrom('assistant', 'user', null),
        content: fc.option(fc.string(), { nil: null }),
        tool_calls: fc.constantFrom(null, [{ index: 0, function: { name: 'f', arguments: '{"a":"}"}' } }]),
        reasoning: fc.option(fc.string({ maxLength: 5 }), { nil: null }),
      },
      { requiredKeys: [] },
    );
    const choice = fc.record(
      { index: fc.constantFrom(0, 1, '0'), delta: fc.oneof(delta, fc.constant(null)), finish_reason: fc.constantFrom(null, 'stop', 'length') },
      { requiredKeys: [] },
    );
    const chunk = fc.record(
      {
        id: fc.string(),
        object: fc.constantFrom('chat.completion.chunk', ''),
        created: fc.integer(),
        model: fc.string(),
        system_fingerprint: fc.constantFrom(null, 'fp_1'),
        choices: fc.array(choice, { maxLength: 2 }),
        usage: fc.constantFrom(null, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }),
        x_groq: fc.constant({ id: 'x' }),
        extra: jsonValue,
      },
      { requiredKeys: ['choices'] },
    );
    fc.assert(
      fc.property(chunk, fc.constantFrom(undefined, 2), (generated, indent) => {
        const text = JSON.stringify(generated, null, indent);
        const c = JSON.parse(text) as Record<string, unknown>;
        const out = relayedChunkText(streamEvent(utf8Bytes(text), c), served, chunkHead(served));
        const reference = normalizeChunk(c, served);
        expect(out === undefined ? undefined : JSON.parse(utf8Text(out))).toEqual(reference);
      }),
      { numRuns: 1000 },
    );
  });

  it('a chunk whose text repeats a key is rebuilt, so what is relayed is what was read', () => {
    const text = '{"id":"a","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"extra":1,"extra":2}';
    const chunk = JSON.parse(text) as Record<string, unknown>;
    const out = utf8Text(relayedChunkText(streamEvent(utf8Bytes(text), chunk), served, chunkHead(served))!);
    expect(out.match(/"extra"/g)).toHaveLength(1);
    expect(JSON.parse(out)).toEqual(normalizeChunk(chunk, served));
  });

  it('the usage and the usage chunk are written as JSON.stringify writes them', () => {
    const count = fc.oneof(fc.nat(), fc.constant(0), fc.constant(2 ** 31));
    const usage: fc.Arbitrary<ChatUsageJson> = fc.record(
      {
        prompt_tokens: count,
        completion_tokens: count,
        total_tokens: count,
        cost: fc.oneof(fc.double(), fc.constantFrom(0, -0, 0.000000001, 1e21, 123456.789)),
        is_byok: fc.boolean(),
        prompt_tokens_details: fc.record({ cached_tokens: count }),
        completion_tokens_details: fc.record({ reasoning_tokens: count }),
      },
      { requiredKeys: ['prompt_tokens', 'completion_tokens', 'total_tokens', 'cost', 'is_byok'] },
    );
    const servedBy = fc.record({ id: fc.constant('gen-1700000000-123AbC_d-9'), model: fc.string(), provider: fc.string(), created: fc.nat() });
    fc.assert(
      fc.property(usage, servedBy, (u, by) => {
        expect(usageText(u)).toBe(JSON.stringify(u));
        expect(utf8Text(usageChunkText(chunkHead(by), u))).toBe(JSON.stringify(usageChunk(by, u)));
      }),
      { numRuns: 2000 },
    );
  });

  it('jsonString quotes any string as JSON.stringify does (escapes, unicode, lone surrogates)', () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', '"', '\\', '\u007f', '\ud800', 'fp_44709d6fcb', 'a\nb'));
    fc.assert(
      fc.property(text, (s) => {
        expect(jsonString(s)).toBe(JSON.stringify(s));
      }),
      { numRuns: 3000 },
    );
  });
});
