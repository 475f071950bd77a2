import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { callTimeout } from '../src/call-timeout.js';
import { Cancellation, cancellableSleep } from '../src/cancellation.js';

describe('Cancellation', () => {
  it('aborts once, with an AbortError unless given a reason, and tells its listeners once', () => {
    const c = new Cancellation();
    const heard = vi.fn();
    c.once('abort', heard);
    expect(c.aborted).toBe(false);
    c.abort();
    c.abort(new Error('second'));
    expect(c.aborted).toBe(true);
    expect((c.reason as DOMException).name).toBe('AbortError');
    expect(heard).toHaveBeenCalledTimes(1);
    const timed = new Cancellation();
    timed.abort(new DOMException('late', 'TimeoutError'));
    expect((timed.reason as DOMException).name).toBe('TimeoutError');
  });

  it('tells its listeners in the order they came, each once; one taken off before it aborts is not told', () => {
    const c = new Cancellation();
    const heard: string[] = [];
    const a = () => heard.push('a');
    const b = () => heard.push('b');
    const gone = () => heard.push('gone');
    // Taken off by another listener while the abort is under way, `late` is told all the same: the abort
    // tells the listeners it had when it began, as an emitter's emit does.
    const late = () => heard.push('late');
    c.once('abort', a);
    c.on('abort', gone);
    c.once('abort', () => c.off('abort', late));
    c.once('abort', b);
    c.once('abort', late);
    c.off('abort', gone);
    expect(c.listenerCount('abort')).toBe(4);
    c.abort();
    expect(heard).toEqual(['a', 'b', 'late']);
    expect(c.listenerCount('abort')).toBe(0);
    // Added after the abort: never told (the event came and went), and not kept.
    c.once('abort', a);
    c.abort();
    expect(heard).toEqual(['a', 'b', 'late']);
    expect(c.listenerCount('abort')).toBe(0);
  });

  it('takes off the last of a listener added twice, as an emitter does', () => {
    const c = new Cancellation();
    let told = 0;
    const f = () => told++;
    c.once('abort', f);
    c.once('abort', f);
    c.removeListener('abort', f);
    c.abort();
    expect(told).toBe(1);
  });
});

describe('callTimeout', () => {
  afterEach(() => vi.useRealTimers());

  it('aborts with the parent, with the parent’s reason, and leaves no listener on the parent once cleared', () => {
    const parent = new Cancellation();
    const call = callTimeout(parent, 60_000);
    expect(parent.listenerCount('abort')).toBe(1);
    const reason = new DOMException('deadline', 'TimeoutError');
    parent.abort(reason);
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toBe(reason);
    expect(parent.listenerCount('abort')).toBe(0);

    const other = new Cancellation();
    const ended = callTimeout(other, 60_000);
    ended.clear();
    expect(other.listenerCount('abort')).toBe(0);
    other.abort();
    expect(ended.signal.aborted).toBe(false);
  });

  it('aborts with a TimeoutError at its timeout, and not before', () => {
    vi.useFakeTimers();
    const parent = new Cancellation();
    const call = callTimeout(parent, 300);
    vi.advanceTimersByTime(299);
    expect(call.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(call.signal.aborted).toBe(true);
    expect((call.signal.reason as DOMException).name).toBe('TimeoutError');
    expect(parent.listenerCount('abort')).toBe(0);
  });

  it('is aborted at once when the parent already was', () => {
    const parent = new Cancellation();
    parent.abort();
    expect(callTimeout(parent, 60_000).signal.aborted).toBe(true);
  });
});

describe('cancellableSleep', () => {
  afterEach(() => vi.useRealTimers());

  it('ends at its time, or at once when cancelled', async () => {
    vi.useFakeTimers();
    const c = new Cancellation();
    let slept = false;
    const sleeping = cancellableSleep(1_000, c).then(() => (slept = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(slept).toBe(false);
    c.abort();
    await sleeping;
    expect(c.listenerCount('abort')).toBe(0);
  });
});

describe('undici takes a Cancellation as a request signal', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    // Answers the head at once and never ends the body.
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a request in flight is cut with the cancellation’s reason', async () => {
    const c = new Cancellation();
    const res = await request(url, { signal: c });
    const reading = res.body.text();
    const reason = new DOMException('the call took longer than 1 ms', 'TimeoutError');
    c.abort(reason);
    await expect(reading).rejects.toBe(reason);
    expect(c.listenerCount('abort')).toBe(0);
  });

  it('a request whose cancellation is already aborted is not sent', async () => {
    const c = new Cancellation();
    c.abort();
    await expect(request(url, { signal: c })).rejects.toMatchObject({ name: 'AbortError' });
  });
});
