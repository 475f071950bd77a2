import { describe, expect, it } from 'vitest';
import { answerFromChunks } from '../src/providers/openai/answer-from-chunks.js';
import { usageOf } from '../src/providers/usage.js';
import { fixtureChunks } from './helpers/scripted-upstream.js';

// An upstream that streams an answer asked for whole is answered whole (json-upstream-streams.test.ts):
// its chunks added up. What a client and the charge rely on: each choice's text is every piece in
// order, a tool call's arguments are every piece joined, and the usage is the stream's.

type Obj = Record<string, any>;
const parse = (file: string) => fixtureChunks(file).map((l) => JSON.parse(l) as Obj);

describe('a streamed answer made whole', () => {
  it.each(['openai-text', 'deepseek-text', 'deepseek-reasoning', 'groq-text', 'mistral-text', 'xai-text', 'azure-model-router.1'])(
    '%s: its text, reasoning, finish reason and usage are the stream’s',
    (name) => {
      const chunks = parse(`${name}.chunks.txt`);
      const answer = answerFromChunks(chunks) as Obj;
      const joined = (key: string) =>
        chunks.map((c) => (c.choices ?? []).map((ch: Obj) => (typeof ch.delta?.[key] === 'string' ? ch.delta[key] : '')).join('')).join('');
      expect(answer.object).toBe('chat.completion');
      expect(answer.choices).toHaveLength(1);
      const message = answer.choices[0].message;
      expect(message.role).toBe('assistant');
      expect(message.content ?? '').toBe(joined('content'));
      expect(message.reasoning_content ?? '').toBe(joined('reasoning_content'));
      const finishes = chunks.flatMap((c) => (c.choices ?? []).map((ch: Obj) => ch.finish_reason)).filter((f) => f !== null && f !== undefined);
      expect(answer.choices[0].finish_reason).toBe(finishes.at(-1) ?? null);
      const usages = chunks.map((c) => usageOf(c)).filter((u) => u !== undefined);
      expect(usageOf(answer)).toEqual(usages.at(-1));
    },
  );

  it('joins a streamed tool call: its id and name once, its arguments in pieces', () => {
    const chunks = parse('groq-tool-call.chunks.txt');
    const answer = answerFromChunks(chunks) as Obj;
    const pieces = chunks.flatMap((c) => (c.choices ?? []).flatMap((ch: Obj) => ch.delta?.tool_calls ?? []));
    expect(pieces.length).toBeGreaterThan(0);
    const calls = answer.choices[0].message.tool_calls as Obj[];
    expect(calls.length).toBe(new Set(pieces.map((p: Obj) => p.index ?? 0)).size);
    expect(calls[0]?.id).toBe(pieces.find((p: Obj) => p.id)?.id);
    expect(calls[0]?.function.arguments).toBe(pieces.map((p: Obj) => p.function?.arguments ?? '').join(''));
    expect(() => JSON.parse(calls[0]?.function.arguments)).not.toThrow();
  });

  it('keeps choices apart by their index, in order', () => {
    const chunk = (index: number, content: string, finish: string | null = null) => ({
      id: 'c',
      created: 1,
      model: 'm',
      choices: [{ index, delta: { content }, finish_reason: finish }],
    });
    const answer = answerFromChunks([chunk(1, 'b'), chunk(0, 'a'), chunk(1, 'B', 'stop'), chunk(0, 'A', 'length')]) as Obj;
    expect(answer.choices.map((c: Obj) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, 'aA', 'length'],
      [1, 'bB', 'stop'],
    ]);
  });
});
