import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';
import { contentOf, readSse } from './helpers/sse.js';

// A byte-order mark opening an upstream's event stream is dropped, and so is one opening a JSON answer:
// an upstream that ignores `stream: true` and answers JSON that opens with one is relayed (as a stream
// of one chunk), not refused as "not JSON".

describe('an upstream answering JSON that opens with a byte-order mark', () => {
  const upstream = new ScriptedUpstream();
  const setup = gatewayOn(upstream, { id: 't/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002' });

  it('is relayed to a streaming client (the upstream ignored stream: true), as a stream that opens with one is', async () => {
    const answer = {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'こんにちは' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
    };
    upstream.script({ kind: 'text', status: 200, body: `\ufeff${JSON.stringify(answer)}`, headers: { 'content-type': 'application/json; charset=utf-8' } });
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const status = res.status;
    const body = await res.clone().text();
    expect(status, body).toBe(200);
    const events = await readSse(res);
    expect(contentOf(events)).toBe('こんにちは');
    expect(events.at(-1)).toBe('[DONE]');
  });
});
