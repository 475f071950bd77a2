import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// The dashboard's key forms. A limit typed the way many people write a number ("10,5", "5 credits",
// "$5") is sent as the text, which the gateway refuses naming `limit`, and the page shows why; it was
// sent as NaN, which JSON writes as null, "no limit": a key with no spending cap at all, silently.
// And an account owner sees every key, however many pages the management API answers them in.

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/dashboard-key-forms.test.ts: the browser tests need Debian's chromium at ${CHROMIUM}: apt-get install -y chromium`);

describe('a limit the dashboard cannot read never becomes "no limit"', () => {
  it('the body the key form sends for a limit typed "10,5" (the text, not NaN, which JSON writes as null) is refused, naming limit', async () => {
    const gw = await startTestGateway();
    try {
      const acct = await gw.account(10);
      const mk = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
      const res = await gw.fetch('/api/v1/keys', { token: mk, body: { name: 'capped', limit: '10,5' } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/limit/);
    } finally {
      await gw.close();
    }
  });
});

describe.skipIf(!hasChromium)("the key forms in headless Chromium (needs Debian's chromium: apt-get install -y chromium)", () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!existsSync('web/dist/index.html')) execFileSync(process.execPath, ['web/build.mjs'], { stdio: 'ignore' });
    gw = await startTestGateway();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });
  beforeEach(async () => {
    page = await browser.newPage();
    page.setDefaultTimeout(5000);
  });
  afterEach(async () => {
    await page.context().close();
  });

  const signIn = async (credential: string) => {
    await page.goto(gw.base);
    await page.locator('input[name=credential]').fill(credential);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('role').waitFor();
  };

  it('an account owner who types a limit of "10,5" does not get a key with no limit', async () => {
    const acct = await gw.account(10);
    const mk = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
    await signIn(mk);
    await page.getByTestId('keys').waitFor();
    await page.locator('input[name=key-name]').fill('comma-limit');
    await page.locator('input[name=key-limit]').fill('10,5');
    await page.getByRole('button', { name: 'Create key' }).click();
    // The page says why (the gateway's message names the field), and no key was made.
    await expect.poll(() => page.getByTestId('remedy').textContent()).toMatch(/limit/);
    const keys = ((await (await gw.fetch('/api/v1/keys?include_disabled=true', { token: mk })).json()) as { data: Array<{ name: string }> }).data;
    expect(keys.find((k) => k.name === 'comma-limit')).toBeUndefined();
  });

  it('the operator who types a limit of "5 credits" for a key does not get a key with no limit', async () => {
    const acct = await gw.account(10);
    await signIn(ADMIN_TOKEN);
    await page.locator(`tr[data-account="${acct.id}"] button`).click();
    await page.getByTestId('keys').waitFor();
    await page.locator('input[name=key-name]').fill('words-limit');
    await page.locator('input[name=key-limit]').fill('5 credits');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => page.getByTestId('remedy').textContent()).toMatch(/limit/);
    const keys = ((await (await gw.fetch(`/api/v1/admin/accounts/${acct.id}/keys`, { token: ADMIN_TOKEN })).json()) as { data: Array<{ name: string }> }).data;
    expect(keys.find((k) => k.name === 'words-limit')).toBeUndefined();
  });

  // CONTRACT §10: "a management key ... manages keys". GET /api/v1/keys answers 100 keys a page (§9):
  // the dashboard asks for every page, so an owner with more than 100 keys can disable or delete any.
  it('an account owner with 101 keys sees (and so can disable or delete) all 101 of them', async () => {
    const acct = await gw.account(10);
    for (let i = 1; i < 101; i++) await gw.admin.createKey(acct.id, { name: `worker-${i}` });
    const mk = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
    const first = ((await (await gw.fetch('/api/v1/keys?include_disabled=true', { token: mk })).json()) as { data: unknown[] }).data.length;
    const second = ((await (await gw.fetch('/api/v1/keys?include_disabled=true&offset=100', { token: mk })).json()) as { data: unknown[] }).data.length;
    expect(first + second).toBe(101);
    await signIn(mk);
    await page.getByTestId('keys').locator('tr[data-key]').first().waitFor();
    expect(await page.getByTestId('keys').locator('tr[data-key]').count()).toBe(101);
  });
});
