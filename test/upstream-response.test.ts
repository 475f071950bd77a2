import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cancellation } from '../src/cancellation.js';
import { requestUpstream, type BodyReader } from '../src/providers/openai/upstream-response.js';

// The OpenAI adapter reads upstream answers through its own undici handler (no Readable body): what
// a Readable gave for free must still hold: every byte in order, cancellation, a cap on what is read,
// backpressure.

type Script = (res: http.ServerResponse) => void;

describe('reading an upstream answer without a stream object', () => {
  let script: Script = (res) => res.end();
  let closedEarly = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    res.on('close', () => {
      if (!res.writableFinished) closedEarly++;
    });
    script(res);
  });
  let pool: Pool;

  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 2 });
  });
  afterAll(async () => {
    await pool.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const post = (signal = new Cancellation().signal) => requestUpstream(pool, { method: 'POST', path: '/', body: '{}' }, signal);

  it('gives the status, the headers in lower case and the whole body, however many writes it came in', async () => {
    const parts = ['{"a":', '"é', '👋"', ',"b":[1,2,3]}'];
    script = (res) => {
      res.writeHead(201, { 'X-Thing': 'yes', 'content-type': 'application/json' });
      for (const p of parts) res.write(p);
      res.end();
    };
    const res = await post();
    expect(res.statusCode).toBe(201);
    expect(res.headers['x-thing']).toBe('yes');
    // Read a turn later: what arrived meanwhile was kept for the reader.
    await new Promise((r) => setTimeout(r, 20));
    expect(await res.body.text()).toBe(parts.join(''));
  });

  it('cuts a body past its limit, gives what was read and closes the connection', async () => {
    const closedBefore = closedEarly;
    let stop = false;
    script = (res) => {
      res.writeHead(500);
      const piece = 'x'.repeat(16 * 1024);
      const pump = () => {
        while (!stop && res.write(piece));
        if (!stop) res.once('drain', pump);
      };
      res.on('close', () => (stop = true));
      pump();
    };
    const res = await post();
    const text = await res.body.text(64 * 1024);
    expect(text.length).toBeGreaterThan(64 * 1024);
    expect(text.length).toBeLessThan(1024 * 1024);
    await expect.poll(() => closedEarly).toBe(closedBefore + 1);
  });

  it('a request cancelled before its answer rejects with the reason; one cancelled mid-body fails its body with it', async () => {
    script = () => undefined; // never answers
    const c1 = new Cancellation();
    const pending = post(c1.signal);
    setTimeout(() => c1.abort(new DOMException('too slow', 'TimeoutError')), 20);
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError', message: 'too slow' });

    const already = new Cancellation();
    already.abort();
    await expect(post(already.signal)).rejects.toMatchObject({ name: 'AbortError' });

    script = (res) => {
      res.writeHead(200);
      res.write('first');
    };
    const c2 = new Cancellation();
    const res = await post(c2.signal);
    const got: string[] = [];
    const ended = new Promise<unknown>((resolve) =>
      res.body.read({ data: (b) => got.push(b.toString()), end: () => resolve('ended'), error: (err) => resolve(err) }),
    );
    await expect.poll(() => got.join('')).toBe('first');
    c2.abort(new DOMException('client gone', 'AbortError'));
    expect(await ended).toMatchObject({ name: 'AbortError', message: 'client gone' });
  });

  it('while paused takes nothing more from the connection, and gives the rest once resumed', async () => {
    let writes = 0;
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => (release = r));
    script = (res) => {
      res.writeHead(200);
      res.write('a');
      void released.then(() => {
        // Enough to fill the socket buffers if nobody reads.
        const big = 'b'.repeat(256 * 1024);
        for (let i = 0; i < 16; i++) if (res.write(big)) writes++;
        res.end('c');
      });
    };
    const res = await post();
    let bytes = 0;
    let done = false;
    const reader: BodyReader = {
      data: (b) => {
        bytes += b.length;
        if (bytes === 1) res.body.pause();
      },
      end: () => (done = true),
      error: (err) => {
        throw err;
      },
    };
    res.body.read(reader);
    await expect.poll(() => bytes).toBe(1);
    expect(res.body.paused).toBe(true);
    release();
    await new Promise((r) => setTimeout(r, 100));
    // Paused: the server's writes back up instead of being read.
    expect(bytes).toBe(1);
    expect(writes).toBeLessThan(16);
    res.body.resume();
    await expect.poll(() => done).toBe(true);
    expect(bytes).toBe(1 + 16 * 256 * 1024 + 1);
  });
});
