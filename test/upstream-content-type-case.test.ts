import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { contentOf, readSse } from './helpers/sse.js';

// Media types are case-insensitive (RFC 9110 §8.3.1): an upstream answering `Content-Type:
// Text/Event-Stream` is streaming, and its stream is relayed as one (it was once read as a JSON answer
// and refused as "not JSON").

const chunk = (content: string, finish: string | null) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });

describe('an upstream stream whose content type is not in lower case', () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('is relayed as a stream', async () => {
    const sse = `data: ${chunk('你好', null)}\n\ndata: ${chunk('世界', 'stop')}\n\ndata: [DONE]\n\n`;
    upstream.script({ kind: 'text', status: 200, body: sse, headers: { 'content-type': 'Text/Event-Stream; charset=UTF-8' } });
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const body = await res.clone().text();
    expect(res.status, body).toBe(200);
    const events = await readSse(res);
    expect(contentOf(events)).toBe('你好世界');
  });
});
