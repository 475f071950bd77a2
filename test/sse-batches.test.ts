import { describe, expect, it } from 'vitest';
import { sseBatches } from '../src/providers/openai/sse-batches.js';
import type { BodyReader, UpstreamBody } from '../src/providers/openai/upstream-response.js';

// The upstream's bytes come in reads that split wherever the network split them: a character of
// several bytes, or the byte-order mark some servers open a stream with, must not change an event.

/** A body that delivers `reads` as they are, then ends. */
function bodyOf(reads: Buffer[]): UpstreamBody {
  return {
    read(reader: BodyReader) {
      for (const r of reads) reader.data(r);
      reader.end();
    },
    text: () => Promise.reject(new Error('not read as text')),
    pause: () => undefined,
    resume: () => undefined,
    paused: false,
    destroy: () => undefined,
  };
}

async function eventsOf(reads: Buffer[]): Promise<string[]> {
  const batches = sseBatches<string>(bodyOf(reads), { toEvent: (data) => data, toError: (err) => err, onEnded: () => undefined });
  const out: string[] = [];
  for await (const batch of batches) out.push(...batch);
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

  it('drops a byte-order mark that opens the stream, even when it is split between reads', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
    for (const size of [1, 2, 4, 64]) {
      expect(await eventsOf(cut(bytes, size)), `reads of ${size} bytes`).toEqual(['{"content":"héllo 👋 wörld"}', '{"content":"日本語"}']);
    }
  });
});
