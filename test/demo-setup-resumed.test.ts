import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bootstrapDemo } from '../src/bootstrap-demo.js';
import { parseConfig } from '../src/config/load.js';
import { embeddedConfig } from '../src/config/defaults.js';
import { startGateway, type Gateway } from '../src/main.js';
import { createLogger } from '../src/observability/logger.js';

// `npm start` on a fresh data folder makes a demo account with 10 credits and a key, and prints the
// key once. A setup cut short (the database locked by another process past the busy timeout, a
// SIGTERM) used to leave the account half-made and the next start made a second one; it is now
// finished by the next start: one demo account, its credits added once, and a key printed.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const locked = () => new Error('database is locked'); // as better-sqlite3 says it past the busy timeout

async function gatewayIn(dir: string): Promise<Gateway> {
  const config = parseConfig(
    { ...embeddedConfig, database_url: `sqlite:${join(dir, 'tollgate.db')}`, listen: { host: '127.0.0.1', port: 0 }, log_level: 'silent' },
    { TOLLGATE_ADMIN_TOKEN: 'set-by-the-operator-0123456789' },
  );
  return startGateway(config, { listen: false, logger: createLogger('silent') });
}

/** The demo accounts of the folder, and what each holds. */
async function demoAccounts(gw: Gateway) {
  const { data } = (await gw.reports.accounts({ search: 'demo' })) as { data: Array<{ id: string; name: string }> };
  return Promise.all(
    data
      .filter((a) => a.name === 'demo')
      .map(async (a) => ({ balance: (await gw.admin.getAccount(a.id)).balance, keys: (await gw.admin.listKeys(a.id)).length })),
  );
}

/** The key a start printed, if it printed one. */
const printedKey = (lines: string[]) => lines.join('\n').match(/API key \(shown once\): (\S+)/)?.[1];

/** Where a first start's setup is cut short: the step that meets the lock, on the first start's gateway. */
const cuts: Array<[string, (gw: Gateway) => { mockRestore(): void }]> = [
  ['its credits', (gw) => vi.spyOn(gw.admin, 'addCredits').mockRejectedValueOnce(locked())],
  ['its key', (gw) => vi.spyOn(gw.admin, 'createKey').mockRejectedValueOnce(locked())],
  // The settings' own writes meet the lock too: the account's id (the account already made), and the
  // mark that the setup is over (the key already made, not yet printed).
  ['the write of its id', (gw) => settingWriteCut(gw, (name) => name === 'demo_account_id')],
  ['the mark that it is over', (gw) => settingWriteCut(gw, (_name, value) => value === 'done')],
];

function settingWriteCut(gw: Gateway, cut: (name: string, value: string) => boolean) {
  const setSetting = gw.ledger.setSetting.bind(gw.ledger);
  return vi.spyOn(gw.ledger, 'setSetting').mockImplementation((name, value) => (cut(name, value) ? Promise.reject(locked()) : setSetting(name, value)));
}

describe('npm start: a demo setup cut short is finished by the next start', () => {
  it.each(cuts)('cut short at %s: one demo account, 10 credits, and one key, the one printed, that works', async (_where, cutShort) => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-demo-resume-'));
    dirs.push(dir);
    const first = await gatewayIn(dir);
    const cut = cutShort(first);
    const firstLines: string[] = [];
    await expect(bootstrapDemo(first, (l) => firstLines.push(l))).rejects.toThrow(/locked/);
    cut.mockRestore();
    expect(printedKey(firstLines)).toBeUndefined();
    await first.close();

    const second = await gatewayIn(dir);
    const lines: string[] = [];
    await bootstrapDemo(second, (l) => lines.push(l));
    const key = printedKey(lines);
    expect(key).toBeDefined();
    // A key the first start made was never shown: it is gone, and the one printed is the demo's only key.
    expect(await demoAccounts(second)).toEqual([{ balance: 10, keys: 1 }]);
    const res = await second.app.inject({ method: 'GET', url: '/api/v1/key', headers: { authorization: `Bearer ${key}` } });
    expect(res.statusCode).toBe(200);

    // And the start after that one finds it made: nothing new, no key printed.
    const after: string[] = [];
    await bootstrapDemo(second, (l) => after.push(l));
    expect(printedKey(after)).toBeUndefined();
    expect(after.join('\n')).toMatch(/^demo account: /);
    expect(await demoAccounts(second)).toEqual([{ balance: 10, keys: 1 }]);
    await second.close();
  });
});
