import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkHead, relayedEvent } from '../src/chat/normalize.js';
import { PlainChunks, plainChunk as plainChunkOfBytes } from '../src/providers/plain-chunk.js';
import type { StreamEvent } from '../src/providers/provider.js';
import { streamEvent } from '../src/providers/stream-event.js';
import { deliveredOf, type DeliveredBody } from '../src/providers/delivered-text.js';
import { utf8Bytes, utf8Text } from '../src/utf8-bytes.js';

// Issue 9: most stream chunks are relayed without being parsed. What matters is that a chunk read that
// way goes out exactly as the parsing path would have sent it, is counted the same, and that
// anything the gateway must read or change is never taken for plain.

const FIXTURES = join(import.meta.dirname, 'fixtures', 'upstream');
const served = { id: 'gen-1-001AAAAAAAAAAAAAA', model: 'vendor/model', provider: 'vendor', created: 1_700_000_000 };
const head = chunkHead(served);

// The reader and the relay take and give a chunk's UTF-8 bytes (utf8-bytes.ts); the tests below speak
// text, converted here at the edges (so a non-ASCII text is read and relayed as its bytes).
function plainChunk(text: string) {
  const plain = plainChunkOfBytes(utf8Bytes(text));
  return plain && { members: utf8Text(plain.plain), delivered: deliveredOf(plain.delivered), output: plain.output };
}
function plainStreamEvent(text: string) {
  const event = plainChunkOfBytes(utf8Bytes(text));
  return event && { ...event, delivered: deliveredOf(event.delivered) as DeliveredBody };
}
/** The chunk an event is relayed as (its `data:` event, which must be one line, unframed). */
function relayedChunkText(event: StreamEvent, by: typeof served, h: typeof head): string | undefined {
  const out = relayedEvent(event, by, h);
  if (out === undefined) return undefined;
  const text = utf8Text(out);
  expect(text).toMatch(/^data: [^\n]*\n\n$/);
  return text.slice('data: '.length, -2);
}

/** What the parsing path makes of a chunk's text. */
function parsed(text: string) {
  const event = streamEvent(utf8Bytes(text), JSON.parse(text) as Record<string, unknown>);
  return {
    relayed: relayedChunkText(event, served, head),
    delivered: deliveredOf(event.delivered),
    choice: event.choice,
    output: event.output,
    usage: event.usage,
    finish: event.finishReason,
  };
}

function fixtureChunks(): Array<[string, string[]]> {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.chunks.txt'))
    .map((f) => [
      f,
      readFileSync(join(FIXTURES, f), 'utf8')
        .split('\n')
        .filter((l) => l.trim().startsWith('{')),
    ]);
}

describe('plain chunks (relayed without parsing)', () => {
  it.each(fixtureChunks())('%s: every chunk read as plain is relayed and counted exactly as the parsing path would', (_name, lines) => {
    for (const text of lines) {
      const plain = plainStreamEvent(text);
      if (!plain) continue;
      const slow = parsed(text);
      expect(relayedChunkText(plain, served, head)).toBe(slow.relayed);
      expect(JSON.parse(relayedChunkText(plain, served, head) as string)).toEqual(JSON.parse(slow.relayed as string));
      expect(plain.delivered).toBe(slow.delivered);
      expect(plain.choice).toBe(slow.choice);
      expect(plain.output).toBe(slow.output);
      expect(plain.finishReason).toBe(slow.finish);
      expect(slow.usage).toBeUndefined();
    }
  });

  it('reads any text in any plain delta as the parsing path does: content alone (read by the first alternative) or with other members', () => {
    const str = (t: string) => JSON.stringify(t);
    const deltas: Array<(a: string, b: string) => string> = [
      (a) => `{"content":${str(a)}}`,
      (a) => `{"role":"assistant","content":${str(a)}}`,
      (a) => `{"content":${str(a)},"refusal":null}`,
      (a, b) => `{"content":${str(a)},"reasoning_content":${str(b)}}`,
      (a, b) => `{"reasoning":${str(b)},"content":${str(a)}}`,
      (a, b) => `{"content":${str(a)},"content":${str(b)}}`,
      (a) => `{"content":null,"reasoning_content":${str(a)}}`,
      () => '{}',
    ];
    // Any choice's delta: an `n` > 1 stream's chunks each carry one of its answers, counted apart.
    // Mid-answer (no finish reason) or at its end.
    const chunk = (d: string, index: number, finish: string | null) =>
      `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":${index},"delta":${d},"finish_reason":${JSON.stringify(finish)}}]}`;
    const finishes = fc.constantFrom(null, null, 'stop', 'length', 'tool_calls', 'content_filter');
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: 'grapheme' }),
        fc.nat(deltas.length - 1),
        fc.nat(999_999_999),
        finishes,
        (a, b, which, index, finish) => {
          const text = chunk((deltas[which] as (a: string, b: string) => string)(a, b), index, finish);
          const plain = plainStreamEvent(text);
          expect(plain).toBeDefined();
          const slow = parsed(text);
          expect(relayedChunkText(plain!, served, head)).toBe(slow.relayed);
          expect(plain!.delivered).toBe(slow.delivered);
          expect(plain!.choice).toBe(index);
          expect(slow.choice).toBe(slow.delivered === '' ? 0 : index);
          expect(plain!.output).toBe(slow.output);
          expect(plain!.finishReason).toBe(slow.finish);
          expect(plain!.finishReason).toBe(finish ?? undefined);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a stream's reader, which reads again only what follows the upstream's fields it saw last, reads every chunk as a chunk read alone", () => {
    // Chunks of a few streams' heads (an escape, an id that is a prefix of another, a longer created), in any order.
    const heads = ['"id":"c1","object":"chat.completion.chunk","created":1,"model":"m"', '"id":"c1","object":"chat.completion.chunk","created":12,"model":"m"'];
    heads.push(
      '"id":"c\\"1","object":"chat.completion.chunk","created":1,"model":"m\\u00e9"',
      '"id":"c","object":"chat.completion.chunk","created":1,"model":"m"',
    );
    const rests = [
      '"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]',
      '"system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"日本"},"finish_reason":null}]',
      '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]',
      '"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"usage":{"prompt_tokens":1}',
      '"choices":[{"index":0,"delta":{"reasoning":"r","content":"c"},"finish_reason":null}],"obfuscation":"o"',
    ];
    const chunkOf = fc.tuple(fc.nat(heads.length - 1), fc.nat(rests.length - 1)).map(([h, r]) => `{${heads[h]},${rests[r]}}`);
    fc.assert(
      fc.property(fc.array(chunkOf, { maxLength: 12 }), (texts) => {
        const reader = new PlainChunks();
        for (const text of texts) expect(reader.read(utf8Bytes(text))).toEqual(plainChunkOfBytes(utf8Bytes(text)));
      }),
      { numRuns: 300 },
    );
  });

  it('reads the text and finish chunks of OpenAI, DeepSeek, Groq, and Mistral as plain, and those with usage or extras as not', () => {
    const byFile = new Map(fixtureChunks());
    for (const file of [
      'openai-text.chunks.txt',
      'deepseek-text.chunks.txt',
      'deepseek-reasoning.chunks.txt',
      'groq-text.chunks.txt',
      'mistral-text.chunks.txt',
    ]) {
      const lines = byFile.get(file) ?? [];
      const plain = lines.filter((l) => plainChunk(l) !== undefined);
      // Every chunk but those that carry usage or the provider's extras.
      const mustParse = lines.filter((l) => parsed(l).usage !== undefined || l.includes('"x_groq"'));
      expect(plain.length, file).toBe(lines.length - mustParse.length);
      expect(plain.length, file).toBeGreaterThan(5);
      // Each answer's end, where it came without usage, is read as plain, its finish reason with it.
      const ends = lines.filter((l) => parsed(l).finish !== undefined && !mustParse.includes(l));
      for (const end of ends) expect(plainStreamEvent(end), file).toMatchObject({ finishReason: parsed(end).finish, output: true });
      // OpenAI ends an answer with a chunk of its own; the others put their usage (or extras) in it.
      if (file === 'openai-text.chunks.txt') expect(ends.length, file).toBe(1);
    }
  });

  const base = '"id":"c1","object":"chat.completion.chunk","created":1,"model":"m"';
  const delta = (d: string, rest = '') => `{${base},"choices":[{"index":0,"delta":${d},"finish_reason":null}]${rest}}`;

  it('leaves a chunk of megabytes to the parser (the expression would overflow its stack on it), relayed and counted the same', () => {
    const text = delta(JSON.stringify({ content: 'word '.repeat(2_000_000) }));
    expect(plainChunk(text)).toBeUndefined();
    expect(plainStreamEvent(text)).toBeUndefined();
    expect(parsed(text).delivered).toBe('word '.repeat(2_000_000));
  });

  it('reads escapes in the text as JSON does', () => {
    const text = delta(String.raw`{"content":"a \"quoted\" word\n\u00e9\\"}`);
    expect(plainChunk(text)?.delivered).toBe('a "quoted" word\né\\');
    expect(relayedChunkText(plainStreamEvent(text)!, served, head)).toBe(parsed(text).relayed);
  });

  it('takes the longer reasoning of two names once, after the content, as the parser-based count does', () => {
    const text = delta('{"content":"x","reasoning":"abc","reasoning_content":"ab"}');
    expect(plainChunk(text)).toMatchObject({ delivered: 'xabc', output: true });
    expect(plainChunk(text)?.delivered).toBe(parsed(text).delivered);
    const empty = delta('{"role":"assistant","content":"","refusal":null}');
    expect(plainChunk(empty)).toMatchObject({ delivered: '', output: false });
    const nulls = delta('{"content":null,"reasoning_content":"r"}');
    expect(plainChunk(nulls)).toMatchObject({ delivered: 'r', output: true });
  });

  it('keeps a fingerprint that is a string, where it was, and drops a null one', () => {
    const before = `{${base},"service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"xyz"}`;
    expect(plainChunk(before)?.members).toBe(
      '"service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"obfuscation":"xyz"',
    );
    const after = `{${base},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"system_fingerprint":"fp_2"}`;
    const nullPrint = `{${base},"system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`;
    for (const text of [before, after, nullPrint]) expect(relayedChunkText(plainStreamEvent(text)!, served, head)).toBe(parsed(text).relayed);
    expect(relayedChunkText(plainStreamEvent(nullPrint)!, served, head)).not.toContain('system_fingerprint');
  });

  it.each([
    ['a finish reason with an escape', `{${base},"choices":[{"index":0,"delta":{},"finish_reason":"st\\u006fp"}]}`],
    ['a finish reason that is not a word of lower-case letters', `{${base},"choices":[{"index":0,"delta":{},"finish_reason":"Stop"}]}`],
    ['an empty finish reason', `{${base},"choices":[{"index":0,"delta":{},"finish_reason":""}]}`],
    ['usage', `{${base},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`],
    ['an error', `{${base},"error":{"message":"boom"},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`],
    ['tool calls', delta('{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}')],
    ['a null field the gateway drops', delta('{"content":"a","tool_calls":null}')],
    ['a role that is not the assistant', delta('{"role":"user","content":"a"}')],
    ['no choice', `{${base},"choices":[]}`],
    ['two choices', `{${base},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":null}]}`],
    ['a choice without finish_reason', `{${base},"choices":[{"index":0,"delta":{"content":"a"}}]}`],
    ['the provider field of an upstream gateway', delta('{"content":"a"}', ',"provider":"x"')],
    ['an unknown member', delta('{"content":"a"}', ',"x_extra":{"a":1}')],
    [
      'a fingerprint written twice',
      `{${base},"system_fingerprint":"a","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"system_fingerprint":null}`,
    ],
    [
      'spaces between members',
      `{"id": "c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
    ],
    ['a raw control character in a string (not JSON)', delta('{"content":"a\u0001b"}')],
    ['a bad escape (not JSON)', delta(String.raw`{"content":"a\qb"}`)],
    ['a leading zero (not JSON)', `{${base},"choices":[{"index":01,"delta":{"content":"a"},"finish_reason":null}]}`],
    ['a truncated chunk', delta('{"content":"a"}').slice(0, -1)],
    [
      'another object type',
      `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
    ],
  ])('is not plain with %s (it is parsed)', (_why, text) => {
    expect(plainChunk(text)).toBeUndefined();
  });
});
