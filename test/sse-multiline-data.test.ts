import { describe, expect, it } from 'vitest';
import { ByteUpstream } from './helpers/byte-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// An upstream event whose data spans several `data:` lines is legal SSE (the lines are joined with
// "\n", which is JSON whitespace). Relayed, it must be one `data:` line again: a raw newline copied
// into it would end the client's line there, the rest read as a field it ignores.

/** An upstream that writes each entry of `parts` as it is (raw SSE bytes). */
/** The data of each event, read as the WHATWG SSE algorithm reads it (LF, CR or CRLF line ends). */
function sseData(text: string): string[] {
  const out: string[] = [];
  let data: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) out.push(data.join('\n'));
      data = [];
      continue;
    }
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
  }
  return out;
}

describe('an upstream event whose data spans several data: lines', () => {
  const upstream = new ByteUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('is relayed as one event whose data is valid JSON (the gateway must not copy a raw newline into a data: line)', async () => {
    const head = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[';
    upstream.parts = [
      // One event, two data lines: its data is `{…"choices":[\n{…}]}`, valid JSON.
      `data: ${head}\ndata: {"index":0,"delta":{"content":"多行のテキスト"},"finish_reason":null}]}\n\n`,
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      'data: [DONE]\n\n',
    ];
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(200);
    const raw = await res.text();
    const datas = sseData(raw);
    expect(datas.at(-1)).toBe('[DONE]');
    // Every event the client reads must be JSON; the first one is `{…"choices":[` (cut at the newline).
    for (const d of datas.slice(0, -1)) expect(() => JSON.parse(d), `event data: ${d}`).not.toThrow();
    const first = JSON.parse(datas[0] as string) as { choices: Array<{ delta: { content?: string } }> };
    expect(first.choices[0]?.delta.content).toBe('多行のテキスト');
  });
});
