import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ByteUpstream } from './helpers/byte-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

// A stream is relayed as its UTF-8 bytes (src/utf8-bytes.ts): read without being decoded, the
// gateway's own fields spliced in, written without being encoded again. What a client must get is
// still text: every character as the upstream sent it, a character cut between two reads whole,
// bytes that are not UTF-8 as U+FFFD, and the gateway's own non-ASCII fields (a model's name)
// encoded once. And what is counted when no usage comes is the text delivered, not its bytes.

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({ id: 'u1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });

describe('a stream relayed as its bytes', () => {
  const upstream = new ByteUpstream();
  let gw: TestGateway;
  const MODEL = 't/modèle-日本';

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: MODEL, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  const body = { model: MODEL, stream: true, messages: [{ role: 'user', content: 'write' }] };

  it('relays text beyond ASCII as it was sent, a character cut between writes whole, with its own non-ASCII model name, and counts the text', async () => {
    const texts = ['Grüße, ', 'こんにちは ', '👋🏽 ', 'naïve café', ' "quoted" é\n'];
    const stream = Buffer.from(
      `data: ${chunk({ role: 'assistant', content: '' })}\n\n` +
        texts.map((t) => `data: ${chunk({ content: t })}\n\n`).join('') +
        `data: ${chunk({}, 'stop')}\n\n`,
      'utf8',
    );
    // Cut inside characters: in 'こ' (3 bytes) and in '👋' (4 bytes).
    const cuts = [stream.indexOf(Buffer.from('こ')) + 1, stream.indexOf(Buffer.from('👋')) + 2, stream.indexOf(Buffer.from('👋')) + 3];
    upstream.parts = [stream.subarray(0, cuts[0]), stream.subarray(cuts[0], cuts[1]), stream.subarray(cuts[1], cuts[2]), stream.subarray(cuts[2])];
    upstream.parts.push(Buffer.from('data: [DONE]\n\n'));
    upstream.holdBefore = 2;

    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body });
    expect(res.status).toBe(200);
    // The first events are relayed while the stream is under way; the rest once the upstream goes on.
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? []).toString('utf8')).toContain('こ');
    upstream.release();
    const reads = [Buffer.from(first.value ?? [])];
    for (let r = await reader.read(); !r.done; r = await reader.read()) reads.push(Buffer.from(r.value));
    const raw = Buffer.concat(reads);
    // What went out is UTF-8 (decoding it and encoding it again gives the same bytes).
    expect(Buffer.from(raw.toString('utf8'), 'utf8').equals(raw)).toBe(true);
    const events = await readSse(new Response(raw));
    const delivered = contentOf(events);
    expect(delivered).toBe('Grüße, こんにちは 👋🏽 naïve café "quoted" é\n');
    for (const e of events) if (e !== '[DONE]') expect(e).toMatchObject({ model: MODEL, provider: 'up' });
    expect(events.at(-1)).toBe('[DONE]');

    // No usage came: the completion charged is the text delivered, counted as text.
    const gen = await gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect(gen).toMatchObject({ usageSource: 'counted', tokensCompletion: countTokens(delivered) });
  });

  it('counts a character the upstream escaped in two halves over two chunks as the one character it is', async () => {
    upstream.holdBefore = -1;
    const half = (escape: string) => chunk({ content: 'X' }).replace('"X"', `"${escape}"`);
    upstream.parts = [Buffer.from(`data: ${chunk({ content: 'a' })}\n\ndata: ${half('\\ud842')}\n\ndata: ${half('\\udfb7')}\n\ndata: [DONE]\n\n`)];
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body });
    expect(contentOf(await readSse(res))).toBe('a\ud842\udfb7');
    const gen = await gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect(gen).toMatchObject({ usageSource: 'counted', tokensCompletion: countTokens('a𠮷') });
    // (Counted as two halves, each U+FFFD, it would be fewer: 2 tokens against 5.)
    expect(countTokens('a𠮷')).toBeGreaterThan(countTokens('a\ufffd\ufffd'));
  });

  it('relays bytes that are not UTF-8 as U+FFFD, so that the client still gets UTF-8', async () => {
    upstream.holdBefore = -1;
    upstream.parts = [
      Buffer.concat([
        Buffer.from(`data: ${chunk({ content: 'ok ' })}\n\ndata: {"id":"u1","object":"chat.completion.chunk","created":1,"model":"m",`),
        Buffer.from('"choices":[{"index":0,"delta":{"content":"a'),
      ]),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('b"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'),
    ];
    const acct = await gw.account(1);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body });
    const raw = Buffer.from(await res.clone().arrayBuffer());
    expect(Buffer.from(raw.toString('utf8'), 'utf8').equals(raw)).toBe(true);
    expect(contentOf(await readSse(res))).toBe('ok a\ufffd\ufffdb');
  });
});
