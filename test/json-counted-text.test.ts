import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// CONTRACT §7: without usage from the upstream, the gateway charges what it delivered (counted).
// A whole answer's delivered text (answerTexts, providers/delivered-text.ts) includes content given as
// an array of parts (OpenRouter's ChatAssistantMessage schema allows it; Mistral's reasoning models
// send [{type:"thinking",…},{type:"text",text:…}]) and an audio answer's transcript, each choice
// counted on its own.

const answer = (message: Record<string, unknown>) => ({
  id: 'x',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
});

describe('a whole answer without usage is charged for every text it delivered', () => {
  const up = new ScriptedUpstream();
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.001', completion: '0.001', contextLength: 100_000 });

  const completionTokens = async (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    up.script({ kind: 'json', body: answer(message) });
    const acct = await setup.gw.account(100);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'u/m', messages: [{ role: 'user', content: 'hi' }], ...extra },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens;
  };

  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);

  it('content given as an array of text parts', async () => {
    expect(await completionTokens({ content: [{ type: 'text', text }] })).toBe(countTokens(text));
  });

  it('content in parts, as Mistral reasoning models send it (thinking, then text)', async () => {
    const thinking = 'Let me think about the fox and the dog. '.repeat(10);
    const n = await completionTokens({
      content: [
        { type: 'thinking', thinking: [{ type: 'text', text: thinking }] },
        { type: 'text', text },
      ],
    });
    expect(n).toBeGreaterThanOrEqual(countTokens(text));
  });

  it("an audio answer's transcript", async () => {
    expect(await completionTokens({ content: null, audio: { id: 'audio_1', data: 'UklGRg==', expires_at: 1, transcript: text } })).toBeGreaterThanOrEqual(
      countTokens(text),
    );
  });

  it('n > 1: each choice is counted as delivered, not glued to the next one', async () => {
    // Six answers of one digit each (a rating prompt with n: 6): six tokens delivered. Counted as the
    // one text "415263", o200k makes two tokens of it ("415", "263").
    const digits = ['4', '1', '5', '2', '6', '3'];
    up.script({
      kind: 'json',
      body: {
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: digits.map((d, index) => ({ index, message: { role: 'assistant', content: d }, finish_reason: 'stop' })),
      },
    });
    const acct = await setup.gw.account(100);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'u/m', n: 6, messages: [{ role: 'user', content: 'rate 1-9' }] },
    });
    const usage = ((await res.json()) as { usage: { completion_tokens: number } }).usage;
    expect(usage.completion_tokens).toBe(digits.reduce((sum, d) => sum + countTokens(d), 0));
  });
});
