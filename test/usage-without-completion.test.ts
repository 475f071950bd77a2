import { describe, expect, it } from 'vitest';
import { usageOf } from '../src/providers/usage.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { readSse } from './helpers/sse.js';

// An upstream that reports its prompt and total but no completion count still told the gateway what
// the answer cost: the completion is the total beyond the prompt. The gateway bills that (CONTRACT §7:
// "with the upstream's token counts when it reports them"), not its own count of the text.

const head = { id: 'up', created: 1, model: 'm' };
const partial = { prompt_tokens: 7, total_tokens: 1007 };

describe('usage with a prompt and a total but no completion count', () => {
  it('reads the completion as the total beyond the prompt; a total under the prompt, or a completion that is not a count, is no usage', () => {
    expect(usageOf({ usage: partial })).toEqual({ promptTokens: 7, completionTokens: 1000, totalTokens: 1007, images: undefined });
    expect(usageOf({ usage: { prompt_tokens: 7, total_tokens: 6 } })).toBeUndefined();
    expect(usageOf({ usage: { prompt_tokens: 7, completion_tokens: null, total_tokens: 1007 } })).toBeUndefined();
    expect(usageOf({ usage: { prompt_tokens: 7 } })).toBeUndefined();
  });

  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 'p/m', upstreamModel: 'm', prompt: '0.001', completion: '0.001' });
  const ask = (key: string, stream: boolean) =>
    setup.gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'p/m', stream, messages: [{ role: 'user', content: 'hi' }] } });

  it('charges a whole answer by the upstream total: 1,007 tokens, not the two words it delivered', async () => {
    upstream.script({
      kind: 'json',
      body: {
        ...head,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'two words' }, finish_reason: 'stop' }],
        usage: partial,
      },
    });
    const acct = await setup.gw.account(100);
    const res = await ask(acct.key, false);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number; cost: number } };
    expect(body.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 1000, cost: 1.007 });
  });

  it('charges a stream by the usage chunk the same way', async () => {
    const chunk = (extra: Record<string, unknown>) => JSON.stringify({ ...head, object: 'chat.completion.chunk', ...extra });
    upstream.script({
      kind: 'sse',
      events: [
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'two words' }, finish_reason: null }] }),
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
        chunk({ choices: [], usage: partial }),
      ],
    });
    const acct = await setup.gw.account(100);
    const res = await ask(acct.key, true);
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const last = events.at(-2) as { usage?: Record<string, unknown> };
    expect(last.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 1000, cost: 1.007 });
  });
});
