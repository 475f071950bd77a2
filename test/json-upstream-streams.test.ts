import { describe, expect, it } from 'vitest';
import { fixtureChunks, ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// The gateway sends "stream": false on a non-streamed request. An upstream that ignores it and
// streams anyway (some OpenAI-compatible servers and proxies always stream) still served the
// request, and billed it. The opposite case (stream: true answered with one JSON body) is replayed
// as a stream (openai-provider.ts, singleChunkStream); this one is read to its end and answered whole
// (answer-from-chunks.ts), rather than failed after the upstream did the work (and a fallback
// endpoint called and billed a second time).

describe('a non-streamed request whose upstream ignores stream:false and streams', () => {
  const up = new ScriptedUpstream();
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002', contextLength: 100_000 });

  it('answers the client with one JSON answer holding the streamed text, charged at the usage the stream reported', async () => {
    // The recorded DeepSeek stream: usage on the chunk with finish_reason (13 prompt, 400 completion).
    const chunks = fixtureChunks('deepseek-text.chunks.txt');
    up.script({ kind: 'sse', events: chunks });
    let text = '';
    for (const line of chunks) {
      const c = JSON.parse(line) as { choices: Array<{ delta?: { content?: string | null } }> };
      for (const ch of c.choices) text += ch.delta?.content ?? '';
    }
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'u/m', messages: [{ role: 'user', content: 'hi' }] } });
    const raw = await res.text();
    expect(res.status, raw.slice(0, 300)).toBe(200);
    const body = JSON.parse(raw) as {
      object: string;
      choices: Array<{ message: { content: string } }>;
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content).toBe(text);
    expect(body.usage).toMatchObject({ prompt_tokens: 13, completion_tokens: 400 });
  });
});
