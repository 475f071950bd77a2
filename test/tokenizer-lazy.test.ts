import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// Issue 9: o200k_base's rank tables cost ~0.4 s to load and ~55 MB of RSS. A gateway whose providers
// report usage never needs them, so they load with the first count, not with the gateway (nor with
// every CLI verb). The gateway loads them through CommonJS (the package's CJS build), whose module
// cache is what this reads; each test file runs in its own worker, with its own cache.

const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((file) => file.includes('gpt-tokenizer'));

describe('the tokenizer loads when the gateway first counts', () => {
  const up = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.001', completion: '0.001' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  const ask = (key: string) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'u/m', messages: [{ role: 'user', content: 'hello there' }] } });

  it('serves an answer that reports its usage without loading it, and loads it for one that does not', async () => {
    const acct = await gw.account(100);
    up.script({ kind: 'json', body: upstreamAnswer(2) });
    const reported = await ask(acct.key);
    expect(reported.status).toBe(200);
    expect(((await reported.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(2);
    expect(loaded()).toBe(false);

    // No usage: the gateway counts the answer itself ("ok": one token in o200k_base).
    const { usage: _reported, ...withoutUsage } = upstreamAnswer(2);
    up.script({ kind: 'json', body: withoutUsage });
    const counted = await ask(acct.key);
    expect(counted.status).toBe(200);
    expect(((await counted.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(1);
    expect(loaded()).toBe(true);
  });
});
