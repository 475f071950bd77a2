import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// Issue 10: CORS, configurable (listen.cors_origins) and off by default, so browser apps can call the public API.

describe('issue 10: CORS', () => {
  let off: TestGateway;
  let on: TestGateway;
  beforeAll(async () => {
    off = await startTestGateway();
    on = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, cors_origins: ['https://app.example.com'] } });
  });
  afterAll(async () => {
    await Promise.all([off.close(), on.close()]);
  });

  it('is off by default: no CORS headers, and a preflight is not answered as one', async () => {
    const acct = await off.account(1);
    const res = await off.fetch('/api/v1/key', { token: acct.key, headers: { origin: 'https://app.example.com' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await off.fetch('/api/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets a configured origin call the API: preflight, then the answer with its headers exposed', async () => {
    const acct = await on.account(1);
    const preflight = await on.fetch('/api/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
    const res = await on.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { origin: 'https://app.example.com' },
      body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(res.headers.get('access-control-expose-headers')).toContain('x-generation-id');
    // A streamed answer (written by the gateway itself, not the framework) carries them too.
    const stream = await on.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { origin: 'https://app.example.com' },
      body: { model: 'demo/echo', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(stream.headers.get('access-control-expose-headers')).toContain('x-generation-id');
    await stream.text();
  });

  it('gives another origin nothing', async () => {
    const acct = await on.account(1);
    const res = await on.fetch('/api/v1/key', { token: acct.key, headers: { origin: 'https://evil.example.net' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses a malformed origin in config, naming the key', async () => {
    await expect(startTestGateway({ listen: { host: '127.0.0.1', port: 0, cors_origins: ['app.example.com/path'] } })).rejects.toThrow(/cors_origins/);
  });
});
