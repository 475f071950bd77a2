import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

const answer = {
  id: 'u',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
};

describe('paid plugins and image pricing are cost components', () => {
  const upstream = new ScriptedUpstream();
  const search = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [base, searchBase] = await Promise.all([upstream.start(), search.start()]);
    upstream.script({ kind: 'json', body: answer });
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'v/model', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002', image: '0.001' } }] }],
      plugins: { web: { search_url: `${searchBase.replace(/\/v1$/, '')}/search`, price: '0.004', max_results: 2 } },
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([upstream.stop(), search.stop()]);
  });

  const ask = (key: string, body: Record<string, unknown>) => gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'v/model', ...body } });

  it('the web plugin searches, injects the results into the prompt, and charges its price', async () => {
    search.script({
      kind: 'json',
      body: {
        results: [
          { title: 'Tollgate', url: 'https://tollgate.test', text: 'A gateway.' },
          { title: 'Two', url: 'https://two.test', text: 'Second.' },
          { title: 'Three', url: 'https://3.test', text: 'Third.' },
        ],
      },
    });
    const { key } = await gw.account(1);
    const res = await ask(key, { messages: [{ role: 'user', content: 'what is tollgate?' }], plugins: [{ id: 'web' }] });
    const body = (await res.json()) as { usage: { cost: number } };
    expect(res.status).toBe(200);
    const q = new URL(`http://x${search.received.at(-1)?.path}`).searchParams;
    expect(q.get('q')).toBe('what is tollgate?');
    expect(q.get('n')).toBe('2');
    const sent = upstream.received.at(-1)?.body as { messages: Array<{ role: string; content: string }>; plugins?: unknown };
    expect(sent.plugins).toBeUndefined(); // the gateway's own field is not sent upstream
    expect(sent.messages[0]?.role).toBe('system');
    expect(sent.messages[0]?.content).toContain('[1] Tollgate (https://tollgate.test)');
    expect(sent.messages[0]?.content).not.toContain('Three'); // max_results
    expect(body.usage.cost).toBe(0.00412); // 100 × 0.000001 + 10 × 0.000002 + the plugin's 0.004
  });

  it('a failed search answers without results and does not charge the plugin', async () => {
    search.script({ kind: 'json', status: 500, body: { error: 'down' } });
    const { key } = await gw.account(1);
    const res = await ask(key, { messages: [{ role: 'user', content: 'hi' }], plugins: [{ id: 'web' }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { cost: number } }).usage.cost).toBe(0.00012);
    expect((upstream.received.at(-1)?.body as { messages: unknown[] }).messages).toHaveLength(1);
  });

  it('the hold covers the most the search results can add to the prompt', async () => {
    search.script({ kind: 'json', body: { results: [] } });
    const acct = await gw.account(0.02); // prompt price 0.000001: two results may add ~21,700 tokens
    const res = await ask(acct.key, { max_tokens: 1, messages: [{ role: 'user', content: 'hi' }], plugins: [{ id: 'web' }] });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { error: { metadata: { limit_source: string; estimated_cost: number } } };
    expect(body.error.metadata.limit_source).toBe('platform_credits');
    expect(body.error.metadata.estimated_cost).toBeGreaterThan(0.004 + 0.0216);
  });

  it('tool schemas count as prompt tokens in the estimate', async () => {
    const acct = await gw.account(0.03);
    const tools = [{ type: 'function', function: { name: 'f', description: 'x '.repeat(40_000), parameters: { type: 'object' } } }];
    const withTools = await ask(acct.key, { max_tokens: 1, messages: [{ role: 'user', content: 'hi' }], tools });
    expect(withTools.status).toBe(402); // ~40,000 prompt tokens × 0.000001 = 0.04 > 0.03
    const plain = await ask(acct.key, { max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.status).toBe(200);
  });

  it('an unknown plugin is a 400 naming it', async () => {
    const { key } = await gw.account(1);
    const res = await ask(key, { messages: [{ role: 'user', content: 'hi' }], plugins: [{ id: 'pdf' }] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/unknown plugin "pdf"/);
  });

  it('images in the prompt are charged at the image price', async () => {
    const { key } = await gw.account(1);
    const content = [
      { type: 'text', text: 'what is in these?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,BBBB' } },
    ];
    const res = await ask(key, { messages: [{ role: 'user', content }] });
    expect(((await res.json()) as { usage: { cost: number } }).usage.cost).toBe(0.00212); // tokens 0.00012 + 2 images × 0.001
  });
});
