import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { readSse } from './helpers/sse.js';

// OpenAI-compatible upstreams stream a refusal as `delta.refusal` text, which is relayed to the
// client. Without usage from the upstream, the gateway charges what it delivered: the refusal's text
// too.

describe('a refusal streamed without usage', () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('is charged for the refusal text it delivered', async () => {
    const refusal = ['申し訳ありませんが、', 'そのご依頼には', 'お応えできません。'];
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    upstream.script({
      kind: 'sse',
      events: [chunk({ role: 'assistant', content: null, refusal: '' }, null), ...refusal.map((r) => chunk({ refusal: r }, null)), chunk({}, 'stop')],
    });
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const events = await readSse(res);
    const relayed = events
      .slice(0, -2)
      .map((e) => (e as { choices: Array<{ delta: { refusal?: string } }> }).choices[0]?.delta.refusal ?? '')
      .join('');
    expect(relayed).toBe(refusal.join(''));
    const usage = (events.at(-2) as { usage: { completion_tokens: number } }).usage;
    expect(usage.completion_tokens).toBe(countTokens(refusal.join('')));
  });
});
