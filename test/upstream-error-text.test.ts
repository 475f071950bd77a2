import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// An upstream's mid-stream error message is cut to 300 characters (its code to 100). A cut between the
// two halves of a surrogate pair (an emoji, a rare CJK character) must not leave half a character: the
// error event's JSON would hold a lone surrogate escape, which strict parsers reject (Rust's serde_json)
// and others mangle.

describe("the mid-stream error event's message", () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('is a well-formed Unicode string even when the upstream message is cut inside an emoji', async () => {
    // 299 characters, then an emoji whose first half is the 300th code unit.
    const message = `${'服务器内部错误，'.repeat(37)}错错错😀 please retry`;
    expect(message.slice(0, 300).at(-1)).toBe('\ud83d');
    upstream.script({
      kind: 'sse',
      events: [
        '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"你好"},"finish_reason":null}]}',
        JSON.stringify({ error: { message, code: 'server_error' } }),
      ],
      done: false,
    });
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const raw = await res.text();
    const lastData = raw
      .trim()
      .split('\n\n')
      .at(-1)
      ?.replace(/^data: /, '') as string;
    const event = JSON.parse(lastData) as { error: { code: number; message: string } };
    expect(event.error.code).toBe(502);
    // No lone surrogate escape in the bytes, and the decoded message is well-formed.
    expect(lastData).not.toMatch(/\\ud8[0-9a-f]{2}(?!\\ud[c-f])/i);
    // Well-formed: it encodes to UTF-8 and back unchanged (a lone surrogate would come back as U+FFFD).
    expect(Buffer.from(event.error.message, 'utf8').toString('utf8')).toBe(event.error.message);
    expect(event.error.message).toMatch(/^upstream stream ended with an error: 服务器内部错误/);
  });
});
