import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.js';
import { Cancellation } from '../src/cancellation.js';
import { WebSearch } from '../src/plugins/web-search.js';
import { OpenAiProvider } from '../src/providers/openai/openai-provider.js';
import { ProviderError } from '../src/providers/provider.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';

const gc = (globalThis as { gc?: () => void }).gc;

/** Forces full collections until `done` settles or `giveUpMs` passes; answers how it ended. */
async function collectWhile<T>(work: Promise<T>, giveUpMs: number, onGiveUp: () => void): Promise<{ ok: true; value: T } | { ok: false; err: unknown }> {
  const outcome = work.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  let settled = false;
  void outcome.then(() => (settled = true));
  const started = Date.now();
  while (!settled) {
    gc?.();
    await new Promise((r) => setTimeout(r, 20));
    // The cut did not come: let the work end on its own (on the old code, a stream then finishes).
    if (!settled && Date.now() - started > giveUpMs) {
      onGiveUp();
      break;
    }
  }
  return outcome;
}

describe('issue 7 item 5: the total timeout survives garbage collection', () => {
  const upstream = new ScriptedUpstream();
  const search = new ScriptedUpstream();
  let upstreamUrl: string;
  let searchUrl: string;

  beforeAll(async () => {
    [upstreamUrl, searchUrl] = await Promise.all([upstream.start(), search.start()]);
  });
  afterAll(async () => {
    await Promise.all([upstream.stop(), search.stop()]);
  });

  it('runs with global.gc exposed (vitest execArgv --expose-gc)', () => {
    expect(typeof gc).toBe('function');
  });

  it('a stream that outlasts its total timeout is cut at the total, even after forced collections', async () => {
    const chunk = (text: string) => JSON.stringify({ id: 'u', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] });
    // Two events, then the upstream holds the stream open (until released).
    upstream.script({ kind: 'sse', events: [chunk('a'), chunk('b'), chunk('c')], holdAfter: 2 });
    const timeouts = { firstByte: 5_000, idle: 5_000, total: 300 };
    const pool = OpenAiProvider.poolFor(upstreamUrl, 4, timeouts);
    const provider = new OpenAiProvider({ id: 'p', baseUrl: upstreamUrl, timeouts, clock: systemClock, pool });
    try {
      const body = { value: { messages: [] }, members: '"messages":[]', streamOptions: undefined };
      const answer = await provider.chat({ model: 'm', body, stream: true, apiKey: undefined, signal: new Cancellation() });
      if (answer.kind !== 'stream') throw new Error('expected a stream');
      const read = (async () => {
        const got: unknown[] = [];
        for await (const batch of answer.events) got.push(...batch.events);
        return got;
      })();
      const outcome = await collectWhile(read, 2_000, () => upstream.release());
      expect(outcome.ok, 'the stream ran to its end past its total timeout').toBe(false);
      const err = (outcome as { err: unknown }).err;
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).failure.kind).toBe('timeout');
    } finally {
      upstream.release();
      await provider.close();
    }
  });

  it('the web plugin search is cut at its timeout, even after forced collections', async () => {
    search.script({ kind: 'json', body: { results: [{ title: 'T', url: 'u', text: 'late' }] }, hold: true });
    const dispatcher = new Agent();
    const web = new WebSearch({ searchUrl: `${searchUrl.replace(/\/v1$/, '')}/search`, maxResults: 3, timeoutMs: 300, dispatcher });
    try {
      const outcome = await collectWhile(web.search([{ role: 'user', content: 'q' }], new Cancellation()), 2_000, () => search.release());
      expect(outcome.ok, 'the search answered past its timeout').toBe(false);
      expect((outcome as { err: Error }).err.name).toBe('TimeoutError');
    } finally {
      search.release();
      await dispatcher.close();
    }
  });
});
