import { describe, expect, it } from 'vitest';
import { ByteUpstream } from './helpers/byte-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { contentOf, readSse } from './helpers/sse.js';

// SSE allows a lone CR as a line ending. A CR that ends a read may be half of a CR LF, and the parser
// would hold it back to see: the reader ends that line at once (sse-batches.ts; its unit tests cover
// a [DONE] ended so while the body stays open), so an upstream that ends its events with "\r\r" and
// closes the body has its last event relayed and charged (its text, finish reason and usage), not
// dropped.

const chunk = (delta: Record<string, unknown>, finish: string | null, extra = '') =>
  `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":${JSON.stringify(finish)}}]${extra}}`;

describe('an upstream that ends its lines with a lone CR', () => {
  const upstream = new ByteUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('relays and charges the last event, which a "\\r\\r" ends before the body does', async () => {
    upstream.parts = [
      `data: ${chunk({ content: 'καλη' }, null)}\r\r`,
      `data: ${chunk({ content: 'μέρα' }, null)}\r\r`,
      // The last event: text, finish reason and the upstream's usage. No [DONE] (the body's end ends the stream).
      `data: ${chunk({ content: '!' }, 'stop', ',"usage":{"prompt_tokens":11,"completion_tokens":42,"total_tokens":53}')}\r\r`,
    ];
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const gen = await setup.gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect({ content: contentOf(events), finish: gen?.finishReason, completion: gen?.tokensCompletion, prompt: gen?.tokensPrompt }).toEqual({
      content: 'καλημέρα!',
      finish: 'stop',
      completion: 42,
      prompt: 11,
    });
  });
});
