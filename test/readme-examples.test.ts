import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { startGateway } from '../src/main.js';
import { LogCapture } from './helpers/gateway.js';
import { createLogger } from '../src/observability/logger.js';

/** Every ```yaml block of README.md, as a newcomer would paste it. */
const readme = readFileSync(join(process.cwd(), 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/^```ya?ml\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);

/** A plausible value for each `${NAME}` a block uses (a secrets key must be base64 of 32 bytes). */
function envFor(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [, name] of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    env[name as string] = /SECRETS_KEY$/.test(name as string)
      ? Buffer.alloc(32, 9).toString('base64')
      : `readme-test-${(name as string).toLowerCase()}-0123456789`;
  }
  return env;
}

describe('issue 7 item 10a: every YAML example in README.md starts as pasted', () => {
  it('README.md has YAML examples', () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  blocks.forEach((text, i) => {
    for (const withEnv of [true, false]) {
      it(`example ${i + 1} (${text.split('\n')[0]?.slice(0, 40)}…) loads with the real loader and starts, with its \${ENV} ${withEnv ? 'set' : 'unset'}`, async () => {
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-readme-'));
        const file = join(dir, 'tollgate.yaml');
        writeFileSync(file, text);
        const config = loadConfig(file, withEnv ? envFor(text) : {});
        // Started on a free port with its ledger in memory, so the test writes nothing but its temp dir.
        const log = new LogCapture();
        const gw = await startGateway(
          { ...config, listen: { ...config.listen, host: '127.0.0.1', port: 0 }, database_url: 'sqlite::memory:' },
          { logger: createLogger('info', log) },
        );
        try {
          const res = await fetch(`${gw.url}/health/ready`);
          expect(res.status).toBe(200);
          const models = (await (await fetch(`${gw.url}/api/v1/models`)).json()) as { data: unknown[] };
          expect(models.data.length).toBeGreaterThan(0);
        } finally {
          await gw.close();
        }
      });
    }
  });

  it('a key left empty (YAML null) means unset, as in the README and CONTRACT §2 examples', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-readme-'));
    const file = join(dir, 'tollgate.yaml');
    writeFileSync(
      file,
      `redis_url:
admin_token:
secrets_key:
log_level:
providers:
  - id: acme
    type: openai
    base_url: http://127.0.0.1:9100/v1
    api_key:
models:
  - id: acme/small:free
    per_minute:
    capacity_per_minute:
    endpoints:
      - { provider: acme, model: small-v1, pricing: { prompt: "0", completion: "0" } }
`,
    );
    const config = loadConfig(file, {});
    expect(config.redis_url).toBeUndefined();
    expect(config.admin_token).toBeUndefined();
    expect(config.secrets_key).toBeUndefined();
    expect(config.log_level).toBe('info');
    expect(config.providers[0]).toMatchObject({ id: 'acme' });
    expect((config.providers[0] as { api_key?: string }).api_key).toBeUndefined();
    expect(config.models[0]?.per_minute).toBeUndefined();
    expect(config.models[0]?.capacity_per_minute ?? undefined).toBeUndefined();
  });
});
