import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// CONTRACT §10: "Every answer carries X-Request-Id"; §6: the DDoS guard comes first. With
// listen.cors_origins set, @fastify/cors answers preflights in its own onRequest hook: registered after
// the gateway's hook, a preflight has met the guard and carries the request id and its log line. An
// OPTIONS request without Origin (no preflight) is answered like one, not with the plugin's text/plain 400.
describe('CORS on: preflight answers carry X-Request-Id and the contract error body', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, cors_origins: ['https://app.example.com'] } });
  });
  afterAll(async () => {
    await gw.close();
  });

  it('a successful preflight carries X-Request-Id', async () => {
    const res = await gw.fetch('/api/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'x-request-id': 'preflight-1' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('x-request-id')).toBe('preflight-1');
  });

  it('an OPTIONS request without Origin is answered as a preflight, with X-Request-Id, not a text/plain 400', async () => {
    const res = await gw.fetch('/api/v1/chat/completions', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('x-request-id')).toMatch(/^req-/);
    expect(res.headers.get('content-type')).toBeNull();
  });
});

describe('CORS on: preflights meet the DDoS guard like every other request (CONTRACT §6: DDoS guard first)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0, 100));
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(
      { listen: { host: '127.0.0.1', port: 0, cors_origins: ['https://app.example.com'] }, limits: { ddos: { per_ip_per_second: 2 } } },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
  });

  it('ten preflights in one second from one IP: some are refused 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await gw.fetch('/api/v1/chat/completions', {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
      });
      statuses.push(res.status);
      await res.text();
    }
    expect(statuses).toContain(429);
  });
});
