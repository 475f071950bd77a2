import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { startTestGateway } from './helpers/gateway.js';

// An admin token (or metrics.token) that ends in a newline or a blank, as a secret read from a file or
// a mounted secret usually does, is read without them: HTTP strips blanks around a header value and
// cannot carry a newline, so the token as written could never be presented, and every admin route (and
// /metrics) answered 401 to the right token with nothing at start saying why. A token holding a blank
// or a control character inside is refused at start, naming the key.

const TOKEN = 'ops-admin-token-0123456789abcdef';

describe('an admin token read with its trailing newline', () => {
  it('the operator who configured "<token>\\n" can use the admin API with <token> (or the config is refused)', async () => {
    let refused = false;
    try {
      parseConfig({
        admin_token: `${TOKEN}\n`,
        providers: [{ id: 'demo', type: 'demo' }],
        models: [{ id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }] }],
      });
    } catch {
      refused = true;
    }
    if (refused) return;
    const gw = await startTestGateway({ admin_token: `${TOKEN}\n` });
    try {
      const res = await gw.fetch('/api/v1/admin/accounts', { token: TOKEN });
      expect(res.status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('the same for metrics.token: a scraper given "<token>\\n" can read /metrics with <token>', async () => {
    let gw;
    try {
      gw = await startTestGateway({ metrics: { token: `${TOKEN}\n` } } as never);
    } catch {
      return; // refused at start: fine
    }
    try {
      const res = await gw.fetch('/metrics', { token: TOKEN });
      expect(res.status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('a token with a blank or a control character inside is refused at start, naming the key', () => {
    const base = {
      providers: [{ id: 'demo', type: 'demo' }],
      models: [{ id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }] }],
    };
    expect(() => parseConfig({ ...base, admin_token: 'ops admin token' })).toThrow(/admin_token.*printable ASCII/);
    expect(() => parseConfig({ ...base, metrics: { token: 'scraper\ttoken-0123456789' } })).toThrow(/metrics\.token.*printable ASCII/);
  });
});
