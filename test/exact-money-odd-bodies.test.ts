import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * withExactMoney (http/exact-money.ts) parses the body a second time with lossless-json, whose parse
 * throws where JSON.parse (Fastify's parser) does not: a key given twice with two values (JSON.parse
 * keeps the last), nesting deeper than its stack. Such a body is read as JSON.parse read it, never a 500.
 */
describe('a money body with a duplicated key', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('POST credits with "kind" given twice is not a 500', async () => {
    const acct = await gw.admin.createAccount({ name: 'dup' });
    const res = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, {
      method: 'POST',
      token: ADMIN_TOKEN,
      rawBody: '{"amount": 5, "kind": "purchase", "kind": "adjustment"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBeLessThan(500);
  });

  it('a management key creating a key with "limit" given twice is not a 500', async () => {
    const acct = await gw.admin.createAccount({ name: 'dup-mgmt' });
    const mk = (await (
      await gw.fetch(`/api/v1/admin/accounts/${acct.id}/keys`, { method: 'POST', token: ADMIN_TOKEN, body: { name: 'm', management: true } })
    ).json()) as { key: string };
    const res = await gw.fetch('/api/v1/keys', {
      method: 'POST',
      token: mk.key,
      rawBody: '{"name": "k", "limit": 1, "limit": 2}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBeLessThan(500);
  });

  it('a credits body JSON.parse reads (nesting 100000 deep in another field) is not a 500: lossless-json recurses and overflows the stack', async () => {
    const acct = await gw.admin.createAccount({ name: 'deep' });
    const n = 100_000;
    const res = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, {
      method: 'POST',
      token: ADMIN_TOKEN,
      rawBody: `{"amount": 5, "note": ${'['.repeat(n)}${']'.repeat(n)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBeLessThan(500);
  });
});
