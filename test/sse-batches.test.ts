import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { sseBatches, type SseBatchesOptions } from '../src/providers/openai/sse-batches.js';
import type { BodyReader, UpstreamBody } from '../src/providers/openai/upstream-response.js';
import { utf8Text } from '../src/utf8-bytes.js';

// The upstream's bytes come in reads that split wherever the network split them: a character of
// several bytes, or the byte-order mark some servers open a stream with, must not change an event.

async function eventsOf(reads: Buffer[]): Promise<string[]> {
  const { stream, reader } = manualStream();
  for (const r of reads) reader().data(r);
  reader().end();
  const out: string[] = [];
  for await (const batch of stream) out.push(...batch.events);
  return out;
}

/** `bytes` cut into reads of `size` bytes. */
function cut(bytes: Buffer, size: number): Buffer[] {
  const reads: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) reads.push(bytes.subarray(i, i + size));
  return reads;
}

describe('reading server-sent events from the upstream', () => {
  const text = 'data: {"content":"héllo 👋 wörld"}\n\ndata: {"content":"日本語"}\n\ndata: [DONE]\n\n';

  it('reads characters of several bytes split between two reads as they were sent', async () => {
    const bytes = Buffer.from(text, 'utf8');
    for (const size of [1, 2, 3, 5, 7, 13]) {
      expect(await eventsOf(cut(bytes, size)), `reads of ${size} bytes`).toEqual(['{"content":"héllo 👋 wörld"}', '{"content":"日本語"}']);
    }
  });

  it('hands each event over as the bytes that came, not decoded (so that they are relayed as they came)', async () => {
    const { reader, stream } = manualStream({ toEvent: (data) => data });
    reader().data(Buffer.from(text, 'utf8'));
    const { value } = await stream.next();
    expect((value?.events as string[]).map((bytes) => Buffer.from(bytes, 'latin1'))).toEqual([
      Buffer.from('{"content":"héllo 👋 wörld"}', 'utf8'),
      Buffer.from('{"content":"日本語"}', 'utf8'),
    ]);
  });

  it('reads bytes that are not UTF-8 as U+FFFD, as a decoder would, so that what is relayed is UTF-8', async () => {
    const bad = Buffer.concat([Buffer.from('data: {"content":"a', 'utf8'), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from('b"}\n\ndata: [DONE]\n\n')]);
    for (const size of [1, 2, 64]) {
      const events = await eventsOf(cut(bad, size));
      expect(events, `reads of ${size} bytes`).toEqual(['{"content":"a\ufffd\ufffd(b"}']);
      expect(Buffer.from(events[0] as string, 'utf8').toString('utf8')).toBe(events[0]);
    }
  });

  it('drops a byte-order mark that opens the stream, even when it is split between reads', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
    for (const size of [1, 2, 4, 64]) {
      expect(await eventsOf(cut(bytes, size)), `reads of ${size} bytes`).toEqual(['{"content":"héllo 👋 wörld"}', '{"content":"日本語"}']);
    }
  });
});

/** A body whose reads the test hands over one at a time. */
function manualBody(onResume: () => void = () => undefined): { body: UpstreamBody; reader: () => BodyReader } {
  let reader: BodyReader | undefined;
  let paused = false;
  const body: UpstreamBody = {
    read: (r) => void (reader = r),
    text: () => Promise.reject(new Error('not read as text')),
    pause: () => void (paused = true),
    resume: () => {
      paused = false;
      onResume();
    },
    get paused() {
      return paused;
    },
    destroy: () => undefined,
  };
  return {
    body,
    reader: () => {
      if (!reader) throw new Error('not read yet');
      return reader;
    },
  };
}

// The events' data are their UTF-8 bytes (utf8-bytes.ts): decoded here, so that the tests read text.
const passThrough: SseBatchesOptions<string> = { toEvent: (data) => utf8Text(data), toError: (err) => err, onEnded: () => undefined };

/** sseBatches over a manual body (its events the data as it is, unless `options` say otherwise). */
function manualStream(options: Partial<SseBatchesOptions<string>> = {}, onResume?: () => void) {
  const { body, reader } = manualBody(onResume);
  return { body, reader, stream: sseBatches<string>(body, { ...passThrough, ...options }) };
}

describe('a batch says whether the stream ended with it (the relay then sends it with its closing events)', () => {
  it('the read that brings data: [DONE] is last; the reads before it are not', async () => {
    const { reader, stream } = manualStream();
    reader().data(Buffer.from('data: one\n\n'));
    expect((await stream.next()).value).toEqual({ events: ['one'], last: false });
    reader().data(Buffer.from('data: two\n\ndata: [DONE]\n\n'));
    expect((await stream.next()).value).toEqual({ events: ['two'], last: true });
    expect((await stream.next()).done).toBe(true);
  });

  it("a read that the body's end follows before the relay asks is last too", async () => {
    const { reader, stream } = manualStream();
    reader().data(Buffer.from('data: one\n\n'));
    reader().end();
    expect((await stream.next()).value).toEqual({ events: ['one'], last: true });
    expect((await stream.next()).done).toBe(true);
  });

  it('a read that an error follows is not last: the error is thrown after it', async () => {
    const { reader, stream } = manualStream();
    reader().data(Buffer.from('data: one\n\n'));
    reader().error(new Error('reset'));
    expect((await stream.next()).value).toEqual({ events: ['one'], last: false });
    await expect(stream.next()).rejects.toThrow('reset');
  });

  it('an event the adapter refuses ends the stream with its error, and the batch before it is not last', async () => {
    const { reader, stream } = manualStream({
      toEvent: (data) => {
        if (data === 'bad') throw new Error('refused');
        return data;
      },
    });
    reader().data(Buffer.from('data: one\n\ndata: bad\n\ndata: [DONE]\n\n'));
    expect((await stream.next()).value).toEqual({ events: ['one'], last: false });
    await expect(stream.next()).rejects.toThrow('refused');
  });

  it('a consumer that falls behind (a slow client) pauses the body after 256 reads, and taking them resumes it', async () => {
    const { body, reader, stream } = manualStream();
    for (let i = 0; i < 255; i++) reader().data(Buffer.from(`data: e${i}\n\n`));
    expect(body.paused).toBe(false);
    reader().data(Buffer.from('data: e255\n\n'));
    expect(body.paused).toBe(true);
    const first = await stream.next();
    expect(first.value?.events).toHaveLength(256);
    expect(first.value?.events.at(-1)).toBe('e255');
    expect(body.paused).toBe(false);
  });

  it('a batch is not last when resuming the body handed over more behind it, the end included (as undici does, synchronously)', async () => {
    // The client fell behind: the body paused after 256 reads, and the rest of the answer, [DONE] and
    // the body's end waited in the connection. Taking the batch resumes the body, which delivers them
    // before next() returns: the batch taken is not the last, and the rest follows, all of it.
    let rest = () => undefined as void;
    const { body, reader, stream } = manualStream({}, () => rest());
    rest = () => {
      rest = () => undefined;
      for (let i = 256; i < 400; i++) reader().data(Buffer.from(`data: e${i}\n\n`));
      reader().data(Buffer.from('data: [DONE]\n\n'));
      reader().end();
    };
    for (let i = 0; i < 256; i++) reader().data(Buffer.from(`data: e${i}\n\n`));
    expect(body.paused).toBe(true);
    const batches: Array<{ events: string[]; last: boolean }> = [];
    for await (const b of stream) batches.push(b);
    expect(batches.map((b) => [b.events.length, b.last])).toEqual([
      [256, false],
      [144, true],
    ]);
    expect(batches.flatMap((b) => b.events)).toEqual(Array.from({ length: 400 }, (_, i) => `e${i}`));
  });
});

describe('line endings: LF, CR LF and a lone CR, wherever the reads split them', () => {
  // An event of one or two data lines (two: joined with an LF, as the SSE spec reads them), its lines
  // ended by any of the three, as some upstreams write them.
  const endings = ['\n', '\r\n', '\r'];
  const streamOf = (events: Array<[string[], number]>) =>
    events.map(([lines, e]) => lines.map((l) => `data: ${l}${endings[e]}`).join('') + endings[e]).join('');

  it('reads the same events from any stream cut into reads of any size as from the stream in one read', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.array(fc.stringMatching(/^[a-z{}":]{1,6}$/), { minLength: 1, maxLength: 2 }), fc.nat(2)), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 9 }),
        async (events, size) => {
          const bytes = Buffer.from(streamOf(events), 'utf8');
          const expected = events.map(([lines]) => lines.join('\n'));
          expect(await eventsOf([bytes])).toEqual(expected);
          expect(await eventsOf(cut(bytes, size))).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ends at data: [DONE] ended by lone CRs while the body stays open (no wait for the body to end)', async () => {
    const { reader, stream } = manualStream();
    reader().data(Buffer.from('data: one\r\r'));
    expect((await stream.next()).value).toEqual({ events: ['one'], last: false });
    reader().data(Buffer.from('data: two\r\rdata: [DONE]\r\r'));
    // The body has not ended (an upstream slow to close it): [DONE] ends the stream all the same.
    expect((await stream.next()).value).toEqual({ events: ['two'], last: true });
    expect((await stream.next()).done).toBe(true);
  });

  it('a CR LF split between two reads is one line ending, not a line and a blank line', async () => {
    const { reader, stream } = manualStream();
    reader().data(Buffer.from('data: a\r'));
    reader().data(Buffer.from('\ndata: b\r'));
    reader().data(Buffer.from('\n\r'));
    reader().data(Buffer.from('\ndata: [DONE]\r\n\r\n'));
    expect((await stream.next()).value).toEqual({ events: ['a\nb'], last: true });
  });
});
