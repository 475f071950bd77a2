import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { readSse } from './helpers/sse.js';

// Without usage from the upstream the gateway charges what it delivered. A tool call is counted by what
// the model wrote of it, its function's name and arguments, so the same call costs the same streamed
// (its arguments in pieces, each in the API's framing) as whole (CONTRACT §7: "streamed or not").

const args = JSON.stringify({ location: '東京都渋谷区', unit: 'celsius', note: 'こんにちは世界' });
const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } };
const head = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm' };

/** The tool call streamed as OpenAI streams one: name first, then the arguments a few characters a chunk. No usage. */
function streamedChunks(): string[] {
  const chunks: Array<Record<string, unknown>> = [
    {
      ...head,
      choices: [
        {
          index: 0,
          delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call, function: { name: 'get_weather', arguments: '' } }] },
          finish_reason: null,
        },
      ],
    },
  ];
  for (let i = 0; i < args.length; i += 4) {
    chunks.push({
      ...head,
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 4) } }] } as never, finish_reason: null }],
    });
  }
  chunks.push({ ...head, choices: [{ index: 0, delta: {} as never, finish_reason: 'tool_calls' }] });
  return chunks.map((c) => JSON.stringify(c));
}

describe('a tool call answered without usage', () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('costs the same completion tokens streamed as whole', async () => {
    const acct = await setup.gw.account(10);
    const body = { model: 't/m', messages: [{ role: 'user', content: '東京の天気は？' }] };

    upstream.script({
      kind: 'json',
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }],
      },
    });
    const whole = await setup.gw.fetch('/api/v1/chat/completions', { token: acct.key, body });
    const wholeUsage = ((await whole.json()) as { usage: { completion_tokens: number } }).usage;

    upstream.script({ kind: 'sse', events: streamedChunks() });
    const streamed = await setup.gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { ...body, stream: true } });
    const events = await readSse(streamed);
    const streamedUsage = (events.at(-2) as { usage: { completion_tokens: number } }).usage;

    // The client got the same tool call both ways.
    const relayedArgs = events
      .slice(0, -2)
      .map(
        (e) =>
          (e as { choices: Array<{ delta: { tool_calls?: Array<{ function: { arguments?: string } }> } }> }).choices[0]?.delta.tool_calls?.[0]?.function
            .arguments ?? '',
      )
      .join('');
    expect(relayedArgs).toBe(args);
    expect(streamedUsage.completion_tokens).toBe(wholeUsage.completion_tokens);
  });
});
