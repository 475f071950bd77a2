import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../src/config/load.js';

const tmp = (text: string) => {
  const file = join(mkdtempSync(join(tmpdir(), 'tollgate-config-')), 'c.yaml');
  writeFileSync(file, text);
  return file;
};

describe('config', () => {
  it('embeds working defaults: SQLite under ./data, the demo provider with a paid and a :free model', () => {
    const c = loadConfig(undefined, {});
    expect(c.listen).toEqual({ host: '127.0.0.1', port: 8080, trust_proxy: false, body_limit_mb: 10, cors_origins: [] });
    expect(c.database_url).toBe('sqlite:./data/tollgate.db');
    expect(c.admin_token).toBeUndefined();
    expect(c.providers.map((p) => p.type)).toEqual(['demo']);
    expect(c.models.map((m) => m.id)).toEqual(['demo/echo', 'demo/echo:free']);
    expect(c.limits.in_flight).toMatchObject({ fraction: 0.5, ceiling: 50, balance_threshold: 100, settlement_window_ms: 60000, default_max_tokens: 4096 });
    expect(c.limits.free_models).toMatchObject({ suffix: ':free', per_minute: 20, per_day_low: 50, per_day_high: 1000, tier_threshold: 10 });
    expect(c.limits.byok_fee).toBe(0.05);
    expect(Object.isFrozen(c.limits)).toBe(true);
  });

  it('prefixes Redis keys and channels with redis_key_prefix, "tollgate:" unless set', () => {
    expect(loadConfig(undefined, {}).redis_key_prefix).toBe('tollgate:');
    expect(loadConfig(tmp('redis_key_prefix: "team-a:"\n'), {}).redis_key_prefix).toBe('team-a:');
    expect(() => loadConfig(tmp('redis_key_prefix: ""\n'), {})).toThrow(/redis_key_prefix/);
  });

  it('replaces ${NAME} with the environment, and drops a value that is only an unset variable', () => {
    const file = tmp(
      `admin_token: \${ADMIN}\nproviders:\n  - { id: acme, type: openai, base_url: "http://\${HOST}:9100/v1", api_key: "\${ACME_KEY}" }\nmodels:\n  - { id: a/b, endpoints: [{ provider: acme, model: b }] }\n`,
    );
    const c = loadConfig(file, { ADMIN: 'a-very-long-admin-token', HOST: '127.0.0.1' });
    expect(c.admin_token).toBe('a-very-long-admin-token');
    const acme = c.providers[0];
    expect(acme?.type === 'openai' && acme.base_url).toBe('http://127.0.0.1:9100/v1');
    expect(acme?.type === 'openai' && acme.api_key).toBeUndefined();
    expect(c.models[0]?.endpoints[0]?.pricing).toEqual({ prompt: '0', completion: '0', request: '0', image: '0' });
  });

  it('takes a port from the environment (port: ${PORT}), as several processes of one config do; refuses one that is no number', () => {
    const file = tmp('listen:\n  host: 127.0.0.1\n  port: ${PORT}\n');
    expect(loadConfig(file, { PORT: '8082' }).listen.port).toBe(8082);
    expect(loadConfig(file, {}).listen.port).toBe(8080);
    expect(() => loadConfig(file, { PORT: 'eighty' })).toThrow(/listen\.port/);
  });

  it('keeps the embedded providers and models when a file sets only other keys', () => {
    const c = loadConfig(tmp('listen: { port: 9999 }\n'), {});
    expect(c.listen.port).toBe(9999);
    expect(c.models.map((m) => m.id)).toContain('demo/echo');
  });

  it('stops on a bad config with a line per problem naming the key', () => {
    const bad = () =>
      parseConfig({
        listen: { port: 'x' },
        database_url: 'mysql://nope',
        secrets_key: 'c2hvcnQ=',
        providers: [{ id: 'p', type: 'openai', base_url: 'not a url' }],
        models: [{ id: 'm', endpoints: [{ provider: 'ghost', model: 'x', pricing: { prompt: '-1' } }] }],
        limits: { surprise: true },
      });
    expect(bad).toThrow(ConfigError);
    let message = '';
    try {
      bad();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/listen\.port: /);
    expect(message).toMatch(/database_url: must start with sqlite: or postgres:\/\//);
    expect(message).toMatch(/secrets_key: must be base64 of exactly 32 bytes/);
    expect(message).toMatch(/providers\.0\.base_url: /);
    expect(message).toMatch(/models\.0\.endpoints\.0\.pricing\.prompt: must be a non-negative decimal/);
    expect(message).toMatch(/limits: .*surprise/);
  });

  it('names a provider that a model points at but nobody configured', () => {
    expect(() => parseConfig({ providers: [{ id: 'demo', type: 'demo' }], models: [{ id: 'm', endpoints: [{ provider: 'ghost', model: 'x' }] }] })).toThrow(
      /models\.0\.endpoints\.0\.provider: names provider "ghost", which is not in providers/,
    );
  });

  it('issue 7 item 5: the request deadline defaults above every provider total timeout; a set one is kept, a bad one named', () => {
    const models = [{ id: 'm', endpoints: [{ provider: 'p', model: 'x' }] }];
    const withTotal = (total: number, limits: Record<string, unknown> = {}) =>
      parseConfig({ providers: [{ id: 'p', type: 'openai', base_url: 'http://127.0.0.1:1/v1', timeouts_ms: { total } }], models, limits });
    expect(withTotal(600_000).limits.request_deadline_ms).toBe(900_000);
    expect(withTotal(1_200_000).limits.request_deadline_ms).toBe(1_260_000);
    expect(withTotal(600_000, { request_deadline_ms: 700_000 }).limits.request_deadline_ms).toBe(700_000);
    expect(() => withTotal(600_000, { request_deadline_ms: 0 })).toThrow(/limits\.request_deadline_ms/);
  });

  it('says when the file is missing or not YAML', () => {
    expect(() => loadConfig('/nonexistent/tollgate.yaml', {})).toThrow(/cannot read config file .*ENOENT/);
    expect(() => loadConfig(tmp('listen: [unclosed'), {})).toThrow(/is not valid YAML/);
  });
});
