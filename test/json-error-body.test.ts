import { describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// OpenAI-compatible routers (OpenRouter itself, LiteLLM, …) answer 200 with an `error` body when the
// model failed after the request was accepted ("any error occurred while the LLM is producing the
// output will be emitted in the response body", OpenRouter's error docs). The streamed path reads
// such an error (a rate limit becomes the contract's 429, the provider's code is kept); the JSON
// path must too, and a failure with no output is charged no token cost (CONTRACT §6, §7).

describe('a non-streamed upstream that answers 200 with an error body', () => {
  const up = new ScriptedUpstream();
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.001', completion: '0.001', contextLength: 100_000 });

  const ask = (key: string) => setup.gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'u/m', messages: [{ role: 'user', content: 'hi' }] } });
  const credits = async (key: string) =>
    ((await (await setup.gw.fetch('/api/v1/credits', { token: key })).json()) as { data: { total_usage: number } }).data.total_usage;

  it('a rate limit reported in a 200 body is the contract 429 with the provider code, as it is mid-stream', async () => {
    up.script({
      kind: 'text',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { code: 429, type: 'rate_limit_exceeded', message: 'Rate limit reached for requests' } }),
    });
    const acct = await setup.gw.account(100);
    const res = await ask(acct.key);
    const body = (await res.json()) as { error: { code: number; message: string; metadata?: Record<string, unknown> } };
    expect({ status: res.status, provider_code: body.error.metadata?.provider_code }).toEqual({ status: 429, provider_code: '429' });
  });

  it('an error body with empty choices is a failure with no output: not a 200, and no token cost is charged', async () => {
    up.script({
      kind: 'text',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [],
        error: { code: 502, message: 'Provider returned error' },
      }),
    });
    const acct = await setup.gw.account(100);
    const res = await ask(acct.key);
    const text = await res.text();
    const charged = await credits(acct.key);
    expect({ status: res.status, charged }, text).toEqual({ status: 502, charged: 0 });
  });
});
