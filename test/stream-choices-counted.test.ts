import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { readSse } from './helpers/sse.js';

// CONTRACT §7: without usage from the upstream, the gateway charges what it delivered (counted). An
// `n` > 1 stream interleaves its answers, a chunk a choice's delta; each answer is counted on its own,
// as the same answers are when they come whole (json-counted-text.test.ts), never glued into one text
// (o200k reads the six one-digit answers "4", "1", … as the text "415263": two tokens, not six).

const chunk = (index: number, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index, delta, finish_reason: null, ...extra }] });

describe('an n > 1 stream without usage is charged for each answer it delivered, each counted on its own', () => {
  const up = new ScriptedUpstream();
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.001', completion: '0.001', contextLength: 100_000 });

  /** The completion tokens an n-answer stream request is charged, its upstream answering `events` (or a whole answer). */
  const streamed = async (events: string[] | Record<string, unknown>, n: number) => {
    up.script(Array.isArray(events) ? { kind: 'sse', events } : { kind: 'json', body: events });
    const acct = await setup.gw.account(100);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'u/m', n, stream: true, messages: [{ role: 'user', content: 'rate 1-9' }] },
    });
    expect(res.status).toBe(200);
    const last = (await readSse(res)).filter((e) => typeof e === 'object' && e !== null && 'usage' in e).at(-1) as { usage: { completion_tokens: number } };
    const gen = await setup.gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect(gen?.tokensCompletion).toBe(last.usage.completion_tokens);
    return last.usage.completion_tokens;
  };

  it('six one-digit answers, each its own chunk (read without parsing), are six answers of one token', async () => {
    const digits = ['4', '1', '5', '2', '6', '3'];
    const events = digits.map((d, index) => chunk(index, { content: d }));
    events.push(...digits.map((_, index) => chunk(index, {}, { finish_reason: 'stop' })));
    expect(await streamed(events, 6)).toBe(digits.reduce((sum, d) => sum + countTokens(d), 0));
  });

  it('two answers in turns, a role chunk and reasoning among them, cost what the two answers cost whole', async () => {
    const first = ['The quick ', 'brown fox ', 'jumps over ', 'the lazy dog.'];
    const second = ['Über ', 'den faulen ', 'Hund springt ', 'der Fuchs.'];
    const events = [chunk(0, { role: 'assistant', content: '' }), chunk(1, { role: 'assistant', content: '' })];
    for (let i = 0; i < first.length; i++) events.push(chunk(0, { content: first[i] }), chunk(1, { content: second[i] }));
    events.push(chunk(1, { reasoning: 'thinking it over' }));
    events.push(chunk(0, {}, { finish_reason: 'stop' }), chunk(1, {}, { finish_reason: 'stop' }));
    expect(await streamed(events, 2)).toBe(countTokens(first.join('')) + countTokens(`${second.join('')}thinking it over`));
  });

  it('a chunk that carries several choices at once (parsed) adds to each of them', async () => {
    const both = JSON.stringify({
      id: 'x',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [
        { index: 0, delta: { content: '7' }, finish_reason: 'stop' },
        { index: 1, delta: { content: '8' }, finish_reason: 'stop' },
      ],
    });
    expect(await streamed([both], 2)).toBe(countTokens('7') + countTokens('8'));
  });

  it('a whole answer to a stream request (relayed as one chunk), its choices without an index, counts each choice', async () => {
    const choices = ['7', '8'].map((d) => ({ message: { role: 'assistant', content: d }, finish_reason: 'stop' }));
    expect(await streamed({ id: 'x', object: 'chat.completion', created: 1, model: 'm', choices }, 2)).toBe(countTokens('7') + countTokens('8'));
  });
});
