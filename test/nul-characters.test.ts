import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { databaseTargets } from './helpers/database.js';

// PostgreSQL's text holds no NUL character (U+0000): one that reached a query (a path or query
// parameter, a name in a body) failed the statement, and the gateway answered 500 (any tenant could:
// GET /api/v1/generation?id=%00), where SQLite answered 404 or stored it. No id, name or search of the
// gateway's holds one: a URL with %00 is a 400 saying so, on every deployment and every route, and a
// name with one is a 400 naming the field (CONTRACT §6: the message names what is wrong).

const refusal = async (res: Promise<Response>, what: RegExp) => {
  const r = await res;
  expect(r.status).toBe(400);
  const body = (await r.json()) as { error: { code: number; message: string } };
  expect(body.error.code).toBe(400);
  expect(body.error.message).toMatch(what);
};

for (const target of databaseTargets) {
  describe(`a NUL character in what a client sends is a 400 naming it (${target.name})`, () => {
    let gw: TestGateway;
    let drop: () => Promise<void>;
    let acct: { id: string; key: string; hash: string };
    let management: string;
    beforeAll(async () => {
      const db = await target.create();
      drop = db.drop;
      gw = await startTestGateway({ database_url: db.url });
      acct = await gw.account(10);
      management = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
    }, 60_000);
    afterAll(async () => {
      await gw?.close();
      await drop?.();
    });

    it('in a query or a path, for an API key, a management key and the admin token alike', async () => {
      const nul = /NUL character \(%00\)/;
      await refusal(gw.fetch('/api/v1/generation?id=gen-%00x', { token: acct.key }), nul);
      await refusal(gw.fetch('/api/v1/keys/ab%00cd', { token: management }), nul);
      await refusal(gw.fetch('/api/v1/keys/ab%00cd', { method: 'PATCH', token: management, body: { name: 'x' } }), nul);
      await refusal(gw.fetch('/api/v1/keys/ab%00cd', { method: 'DELETE', token: management }), nul);
      await refusal(gw.fetch('/api/v1/activity?api_key_hash=%00', { token: management }), nul);
      await refusal(gw.fetch('/api/v1/generations?key=%00', { token: management }), nul);
      await refusal(gw.fetch('/api/v1/admin/accounts/acct%00x', { token: ADMIN_TOKEN }), nul);
      await refusal(gw.fetch('/api/v1/admin/accounts/acct%00x/keys', { token: ADMIN_TOKEN }), nul);
      await refusal(gw.fetch('/api/v1/admin/keys/ab%00cd', { method: 'PATCH', token: ADMIN_TOKEN, body: { disabled: true } }), nul);
      await refusal(gw.fetch('/api/v1/admin/accounts?search=%00', { token: ADMIN_TOKEN }), nul);
    });

    it('in an account or key name, made or renamed by the operator or by a management key', async () => {
      const named = /name.*NUL character \(U\+0000\)/;
      await refusal(gw.fetch('/api/v1/admin/accounts', { token: ADMIN_TOKEN, body: { name: 'acme\u0000corp' } }), named);
      await refusal(gw.fetch(`/api/v1/admin/accounts/${acct.id}/keys`, { token: ADMIN_TOKEN, body: { name: 'k\u0000' } }), named);
      await refusal(gw.fetch('/api/v1/keys', { token: management, body: { name: 'ci\u0000bot' } }), named);
      await refusal(gw.fetch(`/api/v1/keys/${acct.hash}`, { method: 'PATCH', token: management, body: { name: 'ci\u0000bot' } }), named);
      // The key kept its name.
      const key = (await (await gw.fetch(`/api/v1/keys/${acct.hash}`, { token: management })).json()) as { data: { name: string } };
      expect(key.data.name).not.toContain('\u0000');
    });
  });
}
