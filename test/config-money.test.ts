import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/load.js';
import { ManualClock } from '../src/clock.js';
import { startTestGateway } from './helpers/gateway.js';
import { CLI } from './helpers/serve-process.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'tg-config-money-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const head = (db: string) =>
  `listen: { host: 127.0.0.1, port: 0 }\ndatabase_url: sqlite:${join(dir, db)}\nadmin_token: config-money-admin-token-0123456789\nlog_level: warn\n`;

/** Runs `tollgate serve` on a config that must be refused; answers its exit code and stderr. */
async function refused(config: string): Promise<{ code: number; stderr: string }> {
  const r = await run(process.execPath, [CLI, 'serve', '--config', config], { timeout: 20_000 }).then(
    (ok) => ({ code: 0, stderr: ok.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
  return r;
}

// Amounts of credits in the config are counted in nanocredits: one finer than that is refused when the
// config is read, naming its key. (They were made nanocredits only later, at start, after the database
// was opened, with a message that named no key, or on each request: every GET /api/v1/key a 500.)
describe('config: money amounts finer than a nanocredit', () => {
  it('limits.in_flight.ceiling with 10 decimals is refused naming the key (not only "has more than 9 decimals")', { timeout: 30_000 }, async () => {
    const r = await refused(file('ceiling.yaml', `${head('ceiling.db')}limits: { in_flight: { ceiling: 0.0000000001 } }\n`));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/limits\.in_flight\.ceiling/);
  });

  it('alerts.balance_below with 10 decimals is refused naming the key', { timeout: 30_000 }, async () => {
    const r = await refused(file('below.yaml', `${head('below.db')}alerts: { balance_below: 0.0000000001 }\n`));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/alerts\.balance_below/);
  });

  it('limits.free_models.tier_threshold with 10 decimals is refused when the config is read, naming the key', async () => {
    const started = startTestGateway({ limits: { free_models: { tier_threshold: 10.0000000001 } } }, new ManualClock(Date.now()));
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(/limits\.free_models\.tier_threshold: must have at most 9 decimals/);
  });
});

// Prices may be written as YAML numbers. One written with more digits than a number holds is refused,
// naming where it is (it was read as the nearest double, the rest dropped without a word), and one
// below 1e-6 is taken in its plain digits (String(n) wrote it `5e-7`, which the price check refused).
describe('config: prices written as YAML numbers', () => {
  const model = (price: string) =>
    `providers: [{ id: up, type: openai, base_url: "http://127.0.0.1:9/v1" }]\nmodels: [{ id: m, endpoints: [{ provider: up, model: x, pricing: { prompt: ${price} } }] }]\n`;

  it('a price with 20 decimals is refused, not silently cut to the nearest double', () => {
    const path = file('p20.yaml', model('0.10000000000000000001'));
    let prompt: string | undefined;
    let error: unknown;
    try {
      prompt = loadConfig(path, {}).models[0]?.endpoints[0]?.pricing.prompt;
    } catch (err) {
      error = err;
    }
    expect({ prompt, refused: error instanceof ConfigError }).toEqual({ prompt: undefined, refused: true });
    expect((error as Error).message).toMatch(/models\.0\.endpoints\.0\.pricing\.prompt: 0\.10000000000000000001 has more digits than a number holds/);
  });

  it('0.0000005 (an ordinary $0.50 per million tokens) is taken as written, like 0.000001 is', () => {
    expect(loadConfig(file('p6.yaml', model('0.000001')), {}).models[0]?.endpoints[0]?.pricing.prompt).toBe('0.000001');
    expect(loadConfig(file('p7.yaml', model('0.0000005')), {}).models[0]?.endpoints[0]?.pricing.prompt).toBe('0.0000005');
    expect(loadConfig(file('p8.yaml', model('2.5e-7')), {}).models[0]?.endpoints[0]?.pricing.prompt).toBe('0.00000025');
  });
});
