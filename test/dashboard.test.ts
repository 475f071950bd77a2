import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../src/alerts/webhook-signature.js';
import { DASHBOARD_CSP, registerDashboard } from '../src/http/dashboard.js';
import { credits, fromNano, toNano } from '../web/src/format.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// Issue 11: the web dashboard at /, driven in headless Chromium (Debian's `chromium`, through
// playwright-core) against a whole gateway in process: each role signs in and sees the API's own
// numbers; keys are created, rotated, disabled and deleted; credits are topped up; a refused request
// shows its remedy; HTML in a value stays text. A screenshot per test goes to test-output/screenshots/.

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = 'test-output/screenshots';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/dashboard.test.ts: the browser tests need Debian's chromium at ${CHROMIUM}: apt-get install -y chromium`);

describe('issue 11: the dashboard is served with a strict policy', () => {
  it('serves web/dist at / with the CSP and security headers, and says how to build it when it is missing', async () => {
    if (!existsSync('web/dist/index.html')) execFileSync(process.execPath, ['web/build.mjs'], { stdio: 'ignore' });
    const gw = await startTestGateway();
    try {
      const page = await fetch(`${gw.base}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
      expect(DASHBOARD_CSP).toContain("script-src 'self'");
      expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await page.text();
      // No inline script or style: everything the page runs is a file of its own.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/<style|style=/);
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1] as string;
      const asset = await fetch(`${gw.base}${script}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(asset.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
      // The API keeps its own answers; an unknown path stays the API's 404, with no file read.
      expect((await fetch(`${gw.base}/api/v1/models`)).headers.get('content-security-policy')).toBeNull();
      expect((await fetch(`${gw.base}/assets/..%2f..%2fpackage.json`)).status).toBe(404);
    } finally {
      await gw.close();
    }
    const bare = Fastify();
    registerDashboard(bare, '/nonexistent/web/dist');
    const missing = await bare.inject({ url: '/' });
    expect(missing.statusCode).toBe(503);
    expect(missing.body).toContain('npm run build');
    await bare.close();
  });
});

describe.skipIf(!hasChromium)("issue 11: the dashboard in headless Chromium (needs Debian's chromium: apt-get install -y chromium)", () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  const alerts: string[] = [];
  // A loopback webhook receiver: what the gateway delivered to it.
  const WEBHOOK_SECRET = 'dashboard-webhook-secret-0123';
  const received: Array<{ event: string; signature: string; body: string }> = [];
  let receiver: Server;

  const api = async (path: string, token: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await gw.fetch(path, { token, ...init });
    return { status: res.status, body: (await res.json()) as any };
  };
  const chat = (token: string, model = 'demo/echo') =>
    gw.fetch('/api/v1/chat/completions', { token, body: { model, messages: [{ role: 'user', content: 'hello there' }] } });
  const text = async (testId: string) => (await page.getByTestId(testId).first().textContent())?.trim();
  const signIn = async (credential: string, role: string) => {
    await page.goto(gw.base);
    await page.evaluate(() => (globalThis as any).sessionStorage.clear());
    await page.reload();
    await page.locator('input[name=credential]').fill(credential);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('role').waitFor();
    expect(await page.getByTestId('role').getAttribute('data-role')).toBe(role);
    // Kept in the tab's session storage, never in a cookie or the URL.
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
    expect(page.url()).not.toContain(credential);
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('tollgate.credential'))).toContain(credential);
  };
  const shoot = (name: string) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });

  beforeAll(async () => {
    execFileSync(process.execPath, ['web/build.mjs'], { stdio: 'ignore' });
    mkdirSync(SHOTS, { recursive: true });
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ event: String(req.headers['x-tollgate-event']), signature: String(req.headers['x-tollgate-signature']), body });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    gw = await startTestGateway({
      limits: { free_models: { per_minute: 2 } },
      alerts: { webhooks: [{ id: 'ops-hook', url: hook, secret: WEBHOOK_SECRET, events: ['balance_low', 'provider_cooldown'] }] },
    } as never);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    receiver?.close();
  });
  // A fresh browser context a test: its own session storage, as a new tab would have.
  beforeEach(async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(5000);
    page.on('dialog', (d) => {
      alerts.push(d.message());
      void d.dismiss();
    });
  });
  afterEach(async () => {
    await page.context().close();
    expect(alerts).toEqual([]);
  });

  it('key holder: limit, remaining, usage per period, free requests, credits, chart and generations equal the API', async () => {
    const acct = await gw.account(10, { name: 'ci', limit: 5, limit_reset: 'daily' });
    for (const model of ['demo/echo', 'demo/echo', 'demo/echo:free']) expect((await chat(acct.key, model)).status).toBe(200);
    await gw.ledger.flush();
    const key = (await api('/api/v1/key', acct.key)).body.data;
    const credit = (await api('/api/v1/credits', acct.key)).body.data;
    await signIn(acct.key, 'key');
    await page.getByTestId('generations').waitFor();
    expect(await text('key-limit')).toBe(credits(key.limit));
    expect(await text('key-remaining')).toBe(credits(key.limit_remaining));
    expect(await text('usage-daily')).toBe(credits(key.usage_daily));
    expect(await text('usage-weekly')).toBe(credits(key.usage_weekly));
    expect(await text('usage-monthly')).toBe(credits(key.usage_monthly));
    expect(await text('free-used')).toBe(`${key.free_model_daily_requests.used} / ${key.free_model_daily_requests.limit}`);
    expect(key.free_model_daily_requests.used).toBe(1);
    expect(await text('credits-balance')).toBe(fromNano(toNano(credit.total_credits) - toNano(credit.total_usage)));
    // The chart: spend by day and model, its total the sum of the key's activity.
    const activity = (await api('/api/v1/key/activity', acct.key)).body.data as Array<{ usage: number; model: string }>;
    expect(activity.map((r) => r.model).sort()).toEqual(['demo/echo', 'demo/echo:free']);
    const chart = page.getByTestId('spend-chart').first();
    expect(await chart.getAttribute('data-total')).toBe(fromNano(activity.reduce((a, r) => a + toNano(r.usage), 0n)));
    expect(await chart.locator('rect.bar').count()).toBeGreaterThan(0);
    // The latest generations, newest first, as GET /api/v1/generations lists them.
    const generations = (await api('/api/v1/generations', acct.key)).body.data as Array<{ id: string; total_cost: number }>;
    expect(generations).toHaveLength(3);
    const rows = page.getByTestId('generations').locator('tbody tr');
    expect(await rows.count()).toBe(3);
    for (const [i, g] of generations.entries()) {
      expect(await rows.nth(i).getAttribute('data-generation')).toBe(g.id);
      expect((await rows.nth(i).locator('[data-field=cost]').textContent())?.trim()).toBe(credits(g.total_cost));
    }
    // A request from the page: its answer, then a fourth generation.
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('answer').waitFor();
    await gw.ledger.flush();
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(async () => rows.count(), { timeout: 5000 }).toBeGreaterThanOrEqual(4);
    await shoot('key-holder');
  });

  it('a refused request shows the remedy it names, not raw JSON: 402 (credits) and 429 (free-model limit)', async () => {
    const broke = await gw.account(0);
    const refused = await chat(broke.key);
    expect(refused.status).toBe(402);
    const body = (await refused.json()) as any;
    await signIn(broke.key, 'key');
    await page.locator('select[name=model]').selectOption('demo/echo');
    await page.getByRole('button', { name: 'Send' }).click();
    const remedy = page.getByTestId('remedy');
    await remedy.waitFor();
    expect(await remedy.locator('.remedy-title').textContent()).toBe('Payment required: not enough credits on the account');
    expect(await remedy.locator('.remedy-hint').textContent()).toBe(`What to do: ${body.error.metadata.remedy_hint}`);
    expect(await remedy.textContent()).not.toContain('{');
    await shoot('remedy-402');

    // Free models: 2 a minute here; the third is refused with the limit it hit and when it resets.
    const free = await gw.account(1);
    for (let i = 0; i < 2; i++) expect((await chat(free.key, 'demo/echo:free')).status).toBe(200);
    const limited = await chat(free.key, 'demo/echo:free');
    expect(limited.status).toBe(429);
    const limitedBody = (await limited.json()) as any;
    await signIn(free.key, 'key');
    await page.locator('select[name=model]').selectOption('demo/echo:free');
    await page.getByRole('button', { name: 'Send' }).click();
    await remedy.waitFor();
    expect(await remedy.locator('.remedy-title').textContent()).toBe('Rate limited: free-model requests per minute');
    expect(await remedy.locator('.remedy-hint').textContent()).toBe(`What to do: ${limitedBody.error.metadata.remedy_hint}`);
    expect(await remedy.locator('.remedy-when').textContent()).toMatch(/^Resets at \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\.$/);
    await shoot('remedy-429');

    // A credential that is nothing.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('input[name=credential]').fill('sk-tg-v1-not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await remedy.waitFor();
    expect(await remedy.locator('.remedy-title').textContent()).toBe('This credential is not valid');
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
  });

  it("account owner: every key's numbers equal the API's; create a key with limit and reset, rotate, disable, delete; activity", async () => {
    const acct = await gw.account(20, { name: 'worker', limit: 3, limit_reset: 'weekly' });
    expect((await chat(acct.key)).status).toBe(200);
    await gw.ledger.flush();
    const mk = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
    await signIn(mk, 'management');
    const table = page.getByTestId('keys');
    await table.locator(`tr[data-key="${acct.hash}"]`).waitFor();
    const listed = (await api('/api/v1/keys?include_disabled=true', mk)).body.data as any[];
    for (const k of listed) {
      const row = table.locator(`tr[data-key="${k.hash}"]`);
      expect((await row.locator('[data-field=limit]').textContent())?.trim()).toBe(k.limit === null ? '—' : credits(k.limit));
      expect((await row.locator('[data-field=remaining]').textContent())?.trim()).toBe(k.limit_remaining === null ? '—' : credits(k.limit_remaining));
      expect((await row.locator('[data-field=usage-daily]').textContent())?.trim()).toBe(credits(k.usage_daily));
      expect((await row.locator('[data-field=usage-monthly]').textContent())?.trim()).toBe(credits(k.usage_monthly));
    }
    const credit = (await api('/api/v1/credits', mk)).body.data;
    expect(await text('credits-balance')).toBe(fromNano(toNano(credit.total_credits) - toNano(credit.total_usage)));
    expect(await page.getByTestId('activity-by-key').textContent()).toContain('worker');

    // Create a key with a limit and a reset.
    await page.locator('input[name=key-name]').fill('from-the-page');
    await page.locator('input[name=key-limit]').fill('2.5');
    await page.locator('select[name=key-reset]').selectOption('monthly');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret-value').textContent()) as string;
    expect(secret).toMatch(/^sk-tg-v1-/);
    const made = ((await api('/api/v1/keys', mk)).body.data as any[]).find((k) => k.name === 'from-the-page');
    expect(made).toMatchObject({ limit: 2.5, limit_reset: 'monthly', disabled: false });
    expect((await api('/api/v1/key', secret)).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();

    // Rotate: a new secret; the old one stops at once (no grace).
    const row = table.locator(`tr[data-key="${made.hash}"]`);
    await row.locator('[data-action=rotate]').click();
    const rotated = (await page.getByTestId('new-secret-value').textContent()) as string;
    expect(rotated).not.toBe(secret);
    expect((await api('/api/v1/key', rotated)).status).toBe(200);
    expect((await api('/api/v1/key', secret)).status).toBe(401);
    await page.getByRole('button', { name: 'Done' }).click();

    // Disable, then delete.
    await row.locator('[data-action=toggle]').click();
    await expect.poll(async () => (await row.locator('[data-field=state]').textContent())?.trim()).toBe('disabled');
    expect((await api(`/api/v1/keys/${made.hash}`, mk)).body.data.disabled).toBe(true);
    await shoot('account-owner');
    await row.locator('[data-action=delete]').click();
    await row.locator('[data-action=confirm-delete]').click();
    await expect.poll(async () => row.count()).toBe(0);
    expect((await api(`/api/v1/keys/${made.hash}`, mk)).status).toBe(404);
  });

  it('operator: accounts (search, create with type and exemption), top up, keys, BYOK, spend and providers; HTML in a name stays text', async () => {
    const payload = '<img src=x onerror=alert(1)>';
    await signIn(ADMIN_TOKEN, 'admin');
    await page.getByTestId('accounts').waitFor();
    const total = (await api('/api/v1/admin/accounts', ADMIN_TOKEN)).body.total;
    expect(await page.locator('.pager').textContent()).toContain(`${total} accounts`);

    await page.locator('input[name=account-name]').fill(payload);
    await page.locator('select[name=account-type]').selectOption('enterprise');
    await page.locator('input[name=account-exempt]').check();
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByTestId('account-name').waitFor();
    expect(await text('account-name')).toBe(payload);
    expect(await page.locator('main img').count()).toBe(0);
    const found = (await api(`/api/v1/admin/accounts?search=${encodeURIComponent('<img')}`, ADMIN_TOKEN)).body.data as any[];
    expect(found).toHaveLength(1);
    const id = found[0].id as string;
    expect(found[0]).toMatchObject({ name: payload, type: 'enterprise', free_model_limits_exempt: true });

    // Top up, then an adjustment; the balance shown is the API's.
    await page.locator('input[name=amount]').fill('25');
    await page.getByRole('button', { name: 'Add credits' }).click();
    await expect.poll(() => text('account-balance')).toBe('25');
    await page.locator('input[name=amount]').fill('-0.5');
    await page.locator('select[name=kind]').selectOption('adjustment');
    await page.getByRole('button', { name: 'Add credits' }).click();
    // The click only sends the adjustment: the API has it once the request is through.
    const accountNow = async () => (await api(`/api/v1/admin/accounts/${id}`, ADMIN_TOKEN)).body.data;
    await expect.poll(async () => (await accountNow()).balance).toBe(24.5);
    const account = await accountNow();
    expect(account).toMatchObject({ balance: 24.5, total_purchased: 25 });
    await expect.poll(() => text('account-balance')).toBe(credits(account.balance));
    expect(await text('account-purchased')).toBe(credits(account.total_purchased));

    // A key for it, then a request with that key shows in its generations and spend.
    await page.locator('input[name=key-name]').fill('ops');
    await page.locator('input[name=key-limit]').fill('1');
    await page.locator('select[name=key-reset]').selectOption('daily');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-secret-value').textContent()) as string;
    expect((await chat(key)).status).toBe(200);
    await gw.ledger.flush();
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('[data-action=refresh]').click();
    const keys = (await api(`/api/v1/admin/accounts/${id}/keys`, ADMIN_TOKEN)).body.data as any[];
    expect(keys).toHaveLength(1);
    const keyRow = page.getByTestId('keys').locator(`tr[data-key="${keys[0].hash}"]`);
    await expect.poll(async () => (await keyRow.locator('[data-field=usage-daily]').textContent())?.trim()).toBe(credits(keys[0].usage_daily));
    await page.getByTestId('generations').waitFor();
    expect(await page.getByTestId('generations').locator('tbody tr').count()).toBe(1);

    // An amount with more digits than a double holds is sent, and stored, as typed.
    await page.locator('input[name=amount]').fill('100000000.000000001');
    await page.locator('select[name=kind]').selectOption('purchase');
    await page.getByRole('button', { name: 'Add credits' }).click();
    await expect.poll(async () => (await gw.ledger.getAccount(id))?.totalPurchased).toBe(100_000_025_000_000_001n);

    // BYOK: store the account's own key for a provider; never shown back.
    await page.locator('input[name=byok-key]').fill('sk-own-provider-key-123');
    await page.getByRole('button', { name: 'Store' }).click();
    await expect.poll(async () => page.getByTestId('byok').locator('li[data-provider=demo]').textContent()).toContain('own key stored');
    expect((await api(`/api/v1/admin/accounts/${id}/byok`, ADMIN_TOKEN)).body.data).toEqual([{ provider: 'demo', stored: true }]);
    expect(await page.content()).not.toContain('sk-own-provider-key-123');
    await shoot('operator-account');

    // Spend across accounts, and the providers' health.
    await page.locator('[data-tab=spend]').click();
    const spend = (await api('/api/v1/admin/reports/spend?by=account', ADMIN_TOKEN)).body.data as Array<{ cost: number }>;
    const chart = page.getByTestId('spend-chart');
    await chart.waitFor();
    expect(await chart.getAttribute('data-total')).toBe(fromNano(spend.reduce((a, r) => a + toNano(r.cost), 0n)));
    expect(await chart.locator('.legend').textContent()).toContain(payload);
    await page.locator('[data-tab=providers]').click();
    await page.getByTestId('providers').waitFor();
    const health = (await api('/api/v1/admin/providers', ADMIN_TOKEN)).body;
    expect(health.per_process).toBe(true);
    const demo = health.data.find((p: any) => p.provider === 'demo');
    expect(demo.ok).toBeGreaterThan(0);
    expect((await page.getByTestId('providers').locator('tr[data-provider=demo] [data-field=ok]').textContent())?.trim()).toBe(String(demo.ok));
    await shoot('operator-providers');
  });

  it('operator: the alert webhooks are listed, and a test event is sent from the page, signed, and counted', async () => {
    await signIn(ADMIN_TOKEN, 'admin');
    await page.locator('[data-tab=webhooks]').click();
    const row = page.getByTestId('webhooks').locator('tr[data-webhook=ops-hook]');
    await row.waitFor();
    const listed = (await api('/api/v1/admin/webhooks', ADMIN_TOKEN)).body.data[0];
    expect(await row.textContent()).toContain(listed.url);
    expect(await row.textContent()).toContain('balance_low, provider_cooldown');
    expect(await row.textContent()).not.toContain(WEBHOOK_SECRET);
    const before = received.length;
    await row.locator('[data-action=test-webhook]').click();
    await row.locator('[data-field=test-result]').waitFor();
    expect((await row.locator('[data-field=test-result]').textContent())?.trim()).toBe('delivered (HTTP 200)');
    // The receiver got one test event, signed with the webhook's secret.
    expect(received.length).toBe(before + 1);
    const got = received.at(-1)!;
    expect(got.event).toBe('test');
    expect(verifySignature(WEBHOOK_SECRET, got.signature, got.body, Math.floor(Date.now() / 1000))).toBe(true);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForFunction(
      () => (globalThis as any).document.querySelector('tr[data-webhook=ops-hook] [data-field=delivered]')?.textContent?.trim() !== '0',
    );
    expect((await row.locator('[data-field=delivered]').textContent())?.trim()).toBe(
      String((await api('/api/v1/admin/webhooks', ADMIN_TOKEN)).body.data[0].delivered),
    );
    await shoot('operator-webhooks');
  });
});
