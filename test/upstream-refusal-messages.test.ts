import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { requestLogLine } from './helpers/log-lines.js';

const paid = { prompt: '0.000001', completion: '0.000002' };

describe('upstream refusals and the upstream request (CONTRACT §10)', () => {
  const up = new ScriptedUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base, api_key: 'sk-provider-secret-0123456789' }],
      models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: paid }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    gw.fetch('/api/v1/chat/completions', { token: key, headers, body: { model: 'u/m', messages: [{ role: 'user', content: 'hi' }], ...body } });

  // Mistral's API and vLLM's OpenAI-compatible server (before it nested errors) answer
  // {"object":"error","message":…,"type":…,"param":…,"code":…}: the message at the top level.
  it("a 400 in Mistral's / vLLM's error shape: the answer carries the provider's message", async () => {
    const acct = await gw.account(10);
    up.script({
      kind: 'json',
      status: 400,
      body: { object: 'error', message: "This model's maximum context length is 32768 tokens", type: 'BadRequestError', param: null, code: 400 },
    });
    const res = await chat(acct.key, {});
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain('maximum context length is 32768 tokens');
  });

  // FastAPI-based servers (a 422 from request validation): {"detail": [{"loc":…, "msg":…, "type":…}]}.
  it("a 422 in FastAPI's shape: the answer carries the provider's message", async () => {
    const acct = await gw.account(10);
    up.script({
      kind: 'json',
      status: 422,
      body: { detail: [{ loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 2', type: 'less_than_equal' }] },
    });
    const res = await chat(acct.key, { temperature: 7 });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain('less than or equal to 2');
  });

  // "The gateway never changes the client's parameters": stream_options is the client's too; the
  // gateway may need include_usage, but the client's other members must reach the upstream.
  it("a stream's stream_options members other than include_usage reach the upstream", async () => {
    const acct = await gw.account(10);
    up.script({
      kind: 'sse',
      events: [
        JSON.stringify({
          id: 'x',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }],
        }),
        JSON.stringify({
          id: 'x',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        }),
      ],
    });
    const res = await chat(acct.key, { stream: true, stream_options: { include_usage: true, include_obfuscation: false } });
    expect(res.status).toBe(200);
    await res.text();
    const sent = up.received.at(-1)?.body as { stream_options?: Record<string, unknown> };
    expect(sent.stream_options).toMatchObject({ include_obfuscation: false });
  });

  // The client's own API key in its request body (pasted into a field by mistake), echoed back by an
  // upstream in its 400 message: the gateway's log must not keep the key.
  it("the client's API key, echoed by an upstream's 400, never reaches the log", async () => {
    const acct = await gw.account(10);
    up.script({ kind: 'json', status: 400, body: { error: { message: `Invalid value for 'user': '${acct.key}' is too long`, code: 'invalid_value' } } });
    const res = await chat(acct.key, { user: acct.key }, { 'x-request-id': 'echo-client-key' });
    expect(res.status).toBe(400);
    await res.text();
    await requestLogLine(gw.log, 'echo-client-key');
    expect(gw.log.text).not.toContain(acct.key);
  });

  it('an OpenAI-shaped 400 is relayed with its message', async () => {
    const acct = await gw.account(10);
    up.script({ kind: 'json', status: 400, body: { error: { message: 'bad temperature', code: 'invalid_value' } } });
    const res = await chat(acct.key, {});
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('bad temperature');
    up.script({ kind: 'json', body: upstreamAnswer(1) });
  });
});
