import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { readSse } from './helpers/sse.js';

// A chunk is relayed by splicing: the upstream's own id, model, provider and usage are dropped by key
// and the gateway's written in. A key spelled with an escape (`"\u006dodel"`) is the same key to every
// JSON reader, so it is dropped too: were it kept after the gateway's own, JSON.parse would keep the
// upstream's value (the last of two).

describe('a chunk whose keys are written with escapes', () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'upstream-name', prompt: '0.000001', completion: '0.000002' });

  it("keeps the gateway's own model, provider and id in every relayed chunk", async () => {
    const text = String.raw`{"id":"c1","object":"chat.completion.chunk","created":1,"\u006dodel":"upstream-name","\u0070rovider":"upstream-gateway","\u0069d":"chatcmpl-upstream","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`;
    upstream.script({
      kind: 'sse',
      events: [
        text,
        '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"upstream-name","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
      ],
    });
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const id = res.headers.get('x-generation-id');
    const events = await readSse(res);
    const first = events[0] as Record<string, unknown>;
    expect({ id: first.id, model: first.model, provider: first.provider }).toEqual({ id, model: 't/m', provider: 'up' });
  });
});
