import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// The upstream gets the client's text with the upstream model in front, and the client the upstream's
// text with the gateway's fields in front (chat-service.ts, normalize.ts: spliced, not rebuilt). What is
// written anew into them may not be ASCII even when the client's bytes are: a model's upstream name, the
// client's stream_options (an escape in the client's text reads as a character beyond ASCII, which
// JSON.stringify writes as itself). Each must reach its reader as UTF-8, with a Content-Length that
// counts its bytes (a shortcut that wrote ASCII-looking text as a copy was tried and dropped: bench/README.md).

describe('bodies in ASCII and beyond it reach the upstream and the client as UTF-8', () => {
  const up = new ScriptedUpstream().script({ kind: 'json', body: upstreamAnswer(1) });
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await up.start();
    const pricing = { prompt: '0.000001', completion: '0.000002' };
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [
        { id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing }] },
        { id: 'u/accent', context_length: 100_000, endpoints: [{ provider: 'up', model: 'modèle-été', pricing }] },
      ],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  /** Sends `rawBody`; what the upstream received (its text, its parsed body) and what the client got. */
  const send = async (rawBody: string) => {
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, rawBody, headers: { 'content-type': 'application/json' } });
    const answer = Buffer.from(await res.arrayBuffer());
    expect(res.status, answer.toString()).toBe(200);
    if (res.headers.get('content-type')?.startsWith('application/json')) expect(Number(res.headers.get('content-length'))).toBe(answer.length);
    const got = up.received.at(-1);
    if (!got) throw new Error('the upstream received nothing');
    // Bytes that are not UTF-8 would have been read as U+FFFD.
    expect(got.text).not.toContain('\uFFFD');
    expect(Number(got.headers['content-length'])).toBe(Buffer.byteLength(got.text));
    return { text: got.text, body: got.body as Record<string, any>, answer: answer.toString('utf8') };
  };

  it('an ASCII body: the client members as written, the upstream model in front', async () => {
    const { text, body } = await send('{"model":"u/m","temperature":0.50,"messages":[{"role":"user","content":"caf\\u00e9"}]}');
    expect(text).toBe('{"model":"m","stream":false,"temperature":0.50,"messages":[{"role":"user","content":"caf\\u00e9"}]}');
    expect(body.messages[0].content).toBe('café');
  });

  it('a body beyond ASCII', async () => {
    const content = 'naïve café, 日本語, 👋';
    const { body } = await send(JSON.stringify({ model: 'u/m', messages: [{ role: 'user', content }] }));
    expect(body.messages[0].content).toBe(content);
  });

  it('an ASCII body to a model whose upstream name is not ASCII', async () => {
    const { body } = await send('{"model":"u/accent","messages":[{"role":"user","content":"hi"}]}');
    expect(body.model).toBe('modèle-été');
  });

  it('an ASCII body whose stream_options hold an escape', async () => {
    up.script({
      kind: 'sse',
      events: [JSON.stringify({ id: 'u', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }] })],
    });
    try {
      const { body, answer } = await send(
        '{"model":"u/m","stream":true,"stream_options":{"tag":"\\u00e9t\\u00e9"},"messages":[{"role":"user","content":"hi"}]}',
      );
      expect(body.stream_options).toEqual({ tag: 'été', include_usage: true });
      expect(answer).toContain('data: [DONE]');
    } finally {
      up.script({ kind: 'json', body: upstreamAnswer(1) });
    }
  });

  it('a whole answer beyond ASCII to an ASCII request, and one in ASCII', async () => {
    for (const content of ['über', 'plain']) {
      up.script({ kind: 'json', body: { ...upstreamAnswer(1), choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] } });
      const { answer } = await send('{"model":"u/m","messages":[{"role":"user","content":"hi"}]}');
      expect((JSON.parse(answer) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe(content);
    }
    up.script({ kind: 'json', body: upstreamAnswer(1) });
  });
});
