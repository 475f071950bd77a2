import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { caught } from './helpers/caught.js';

// The official @openrouter/sdk drives the management API (CONTRACT §9) exactly as an account owner
// would: every answer goes through the SDK's own response schemas, so a field missing or of the wrong
// type makes the call throw.

const messages = [{ role: 'user' as const, content: 'hello' }];
const HOUR = 3_600_000;

describe('the management API with the official @openrouter/sdk', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 9));
  let gw: TestGateway;
  const sdk = (apiKey: string) => new OpenRouter({ serverURL: `${gw.base}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });
  const secrets: string[] = [];

  /** An account with credits, one inference key and a management key, made by the operator through the admin API. */
  async function owner(credits = 10) {
    const acct = await gw.account(credits);
    const res = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/keys`, { token: ADMIN_TOKEN, body: { name: 'provisioning', management: true } });
    expect(res.status).toBe(201);
    const made = (await res.json()) as { key: string; data: { hash: string; management: boolean } };
    expect(made.data.management).toBe(true);
    secrets.push(acct.key, made.key);
    return { ...acct, management: made.key, managementHash: made.data.hash };
  }
  const chat = (key: string) => gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', messages } });

  beforeAll(async () => {
    gw = await startTestGateway({}, clock);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('a management key reports is_management_key on /key, and is refused for inference (401)', async () => {
    const o = await owner();
    const { data } = await sdk(o.management).apiKeys.getCurrentKeyMetadata();
    expect(data.isManagementKey).toBe(true);
    expect((await sdk(o.key).apiKeys.getCurrentKeyMetadata()).data.isManagementKey).toBe(false);

    const err = await caught(sdk(o.management).chat.send({ chatRequest: { model: 'demo/echo', messages } }));
    expect(err).toBeInstanceOf(errors.UnauthorizedResponseError);
    expect((err as errors.UnauthorizedResponseError).error.message).toMatch(/management key/);
    // It reads the account's credits, as OpenRouter's management keys do.
    expect((await sdk(o.management).credits.getCredits()).data).toEqual({ totalCredits: 10, totalUsage: 0 });
  });

  it('apiKeys.create answers 201 with the key once; the key serves inference and carries its settings', async () => {
    const o = await owner();
    const expiresAt = new Date(clock.now() + 24 * HOUR);
    const created = await sdk(o.management).apiKeys.create({
      requestBody: { name: 'ci', limit: 2.5, limitReset: 'daily', includeByokInLimit: true, expiresAt },
    });
    secrets.push(created.key);
    expect(created.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(created.data).toMatchObject({
      name: 'ci',
      label: `${created.key.slice(0, 12)}...${created.key.slice(-3)}`,
      disabled: false,
      limit: 2.5,
      limitRemaining: 2.5,
      limitReset: 'daily',
      includeByokInLimit: true,
      usage: 0,
      usageDaily: 0,
      byokUsageMonthly: 0,
      createdAt: new Date(clock.now()).toISOString(),
      updatedAt: null,
      creatorUserId: null,
      workspaceId: o.id,
      externalUser: null,
    });
    expect(created.data.expiresAt).toEqual(expiresAt);

    const answer = await chat(created.key);
    expect(answer.status).toBe(200);
    const cost = ((await answer.json()) as { usage: { cost: number } }).usage.cost;
    const status = await sdk(created.key).apiKeys.getCurrentKeyMetadata();
    expect(status.data).toMatchObject({ usage: cost, limit: 2.5, isManagementKey: false });

    // The raw answer is exactly 201 {data, key}.
    const raw = await gw.fetch('/api/v1/keys', { token: o.management, body: { name: 'raw' } });
    expect(raw.status).toBe(201);
    const body = (await raw.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['data', 'key']);
    secrets.push(body.key as string);
  });

  it('apiKeys.get and apiKeys.update read and change one of the account’s keys, usage included', async () => {
    const o = await owner();
    expect((await chat(o.key)).status).toBe(200);
    const client = sdk(o.management);
    const got = await client.apiKeys.get({ hash: o.hash });
    expect(got.data.hash).toBe(o.hash);
    expect(got.data.usage).toBeGreaterThan(0);
    expect(got.data.usageDaily).toBe(got.data.usage);

    clock.advance(1000);
    const updated = await client.apiKeys.update({ hash: o.hash, requestBody: { name: 'renamed', limit: 1, limitReset: 'weekly', includeByokInLimit: true } });
    expect(updated.data).toMatchObject({ hash: o.hash, name: 'renamed', limit: 1, limitReset: 'weekly', includeByokInLimit: true, disabled: false });
    expect(updated.data.updatedAt).toBe(new Date(clock.now()).toISOString());
    expect(updated.data.limitRemaining).toBe(1 - got.data.usage);

    const disabled = await client.apiKeys.update({ hash: o.hash, requestBody: { disabled: true, limit: null } });
    expect(disabled.data).toMatchObject({ disabled: true, limit: null, limitRemaining: null });
    expect((await chat(o.key)).status).toBe(401);
    await client.apiKeys.update({ hash: o.hash, requestBody: { disabled: false } });
    expect((await chat(o.key)).status).toBe(200);
  });

  it('PATCH sets an expiry (and null clears it); one in the past is a 400 naming expires_at, on create and on update', async () => {
    const o = await owner();
    const patch = (body: unknown) => gw.fetch(`/api/v1/keys/${o.hash}`, { method: 'PATCH', token: o.management, body });
    const at = new Date(clock.now() + HOUR).toISOString();
    const set = await patch({ expires_at: at });
    expect(((await set.json()) as { data: { expires_at: string } }).data.expires_at).toBe(at);
    const cleared = await patch({ expires_at: null });
    expect(((await cleared.json()) as { data: { expires_at: string | null } }).data.expires_at).toBeNull();

    const past = new Date(clock.now() - 1000).toISOString();
    for (const res of [await patch({ expires_at: past }), await gw.fetch('/api/v1/keys', { token: o.management, body: { name: 'x', expires_at: past } })]) {
      expect(res.status).toBe(400);
      const error = ((await res.json()) as { error: { message: string; metadata: { field: string } } }).error;
      expect(error.message).toContain('expires_at');
      expect(error.metadata.field).toBe('expires_at');
    }
    const err = await caught(sdk(o.management).apiKeys.create({ requestBody: { name: 'late', expiresAt: new Date(clock.now() - 1) } }));
    expect(err).toBeInstanceOf(errors.BadRequestResponseError);

    // A key whose expiry passes stops working (401).
    await patch({ expires_at: new Date(clock.now() + 60_000).toISOString() });
    expect((await chat(o.key)).status).toBe(200);
    clock.advance(60_000);
    const expired = await chat(o.key);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
  });

  it('apiKeys.list pages the account’s own inference keys, 100 a page, leaving disabled ones out unless asked', async () => {
    const o = await owner();
    const other = await owner();
    for (let i = 0; i < 104; i++) {
      clock.advance(1); // oldest first, by creation
      await gw.admin.createKey(o.id, { name: `k${i}` });
    }
    await gw.admin.patchKey(o.hash, { disabled: true });
    const client = sdk(o.management);
    const first = await client.apiKeys.list();
    expect(first.data).toHaveLength(100);
    expect(first.data[0]?.name).toBe('k0'); // the disabled key is left out
    const second = await client.apiKeys.list({ offset: 100 });
    expect(second.data.map((k) => k.name)).toEqual(['k100', 'k101', 'k102', 'k103']);
    const withDisabled = await client.apiKeys.list({ includeDisabled: true });
    expect(withDisabled.data[0]?.hash).toBe(o.hash);
    expect((await client.apiKeys.list({ includeDisabled: true, offset: 100 })).data).toHaveLength(5);

    // Neither the management key itself nor another account's keys are in it.
    const hashes = new Set([...withDisabled.data, ...(await client.apiKeys.list({ includeDisabled: true, offset: 100 })).data].map((k) => k.hash));
    expect(hashes.size).toBe(105);
    expect(hashes.has(o.managementHash)).toBe(false);
    expect(hashes.has(other.hash)).toBe(false);
    expect(JSON.stringify(withDisabled)).not.toContain(o.key);

    // Keys carry their account as workspace: another workspace holds none.
    expect((await client.apiKeys.list({ workspaceId: o.id })).data).toHaveLength(100);
    expect((await client.apiKeys.list({ workspaceId: 'elsewhere' })).data).toEqual([]);

    for (const [query, field] of [
      ['offset=-1', 'offset'],
      ['offset=ten', 'offset'],
      ['include_disabled=yes', 'include_disabled'],
    ] as const) {
      const res = await gw.fetch(`/api/v1/keys?${query}`, { token: o.management });
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(field);
    }
  });

  it('apiKeys.delete: the key stops working and is gone from the API, while its generations and spend stay', async () => {
    const o = await owner();
    const client = sdk(o.management);
    const { key, data } = await client.apiKeys.create({ requestBody: { name: 'short-lived' } });
    secrets.push(key);
    const answer = await chat(key);
    const { id, usage } = (await answer.json()) as { id: string; usage: { cost: number } };

    expect(await client.apiKeys.delete({ hash: data.hash })).toEqual({ deleted: true });
    expect((await chat(key)).status).toBe(401);
    expect(await caught(client.apiKeys.get({ hash: data.hash }))).toBeInstanceOf(errors.NotFoundResponseError);
    expect(await caught(client.apiKeys.delete({ hash: data.hash }))).toBeInstanceOf(errors.NotFoundResponseError);
    expect((await client.apiKeys.list({ includeDisabled: true })).data.map((k) => k.hash)).not.toContain(data.hash);

    // Its generation still names it, and the account's spend still counts it.
    const generation = await sdk(o.key).generations.getGeneration({ id });
    expect(generation.data.totalCost).toBe(usage.cost);
    expect((await gw.ledger.getGeneration(id))?.keyHash).toBe(data.hash);
    expect((await gw.ledger.keyUsage(data.hash, clock.now())).all.usage).toBeGreaterThan(0n);
    expect((await client.credits.getCredits()).data.totalUsage).toBe(usage.cost);
  });

  it('rotation: a new secret for the same key (hash, usage and limits kept); the old one works for its grace period, then 401', async () => {
    const o = await owner();
    const client = sdk(o.management);
    const { key: oldSecret, data } = await client.apiKeys.create({ requestBody: { name: 'rotating', limit: 3 } });
    expect((await chat(oldSecret)).status).toBe(200);
    const before = await client.apiKeys.get({ hash: data.hash });

    const res = await gw.fetch(`/api/v1/keys/${data.hash}/rotate`, { token: o.management, body: { grace_seconds: 60 } });
    expect(res.status).toBe(200);
    const rotated = (await res.json()) as { key: string; data: Record<string, unknown> };
    secrets.push(oldSecret, rotated.key);
    expect(rotated.key).not.toBe(oldSecret);
    expect(rotated.data).toMatchObject({ hash: data.hash, name: 'rotating', limit: 3, usage: before.data.usage });
    expect(rotated.data.label).toBe(`${rotated.key.slice(0, 12)}...${rotated.key.slice(-3)}`);

    expect((await chat(rotated.key)).status).toBe(200);
    expect((await chat(oldSecret)).status).toBe(200); // within its grace period
    const after = await client.apiKeys.get({ hash: data.hash });
    expect(after.data.usage).toBeGreaterThan(before.data.usage); // both secrets charge the one key
    clock.advance(60_000);
    const refused = await chat(oldSecret);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/rotated/);
    expect((await chat(rotated.key)).status).toBe(200);

    // Without a grace period, the old secret stops at once.
    const again = (await (await gw.fetch(`/api/v1/keys/${data.hash}/rotate`, { method: 'POST', token: o.management })).json()) as { key: string };
    secrets.push(again.key);
    expect((await chat(rotated.key)).status).toBe(401);
    expect((await chat(again.key)).status).toBe(200);

    for (const body of [{ grace_seconds: -1 }, { grace_seconds: 1.5 }, { grace_seconds: 'soon' }, { grace_seconds: 31 * 24 * 3600 }]) {
      const bad = await gw.fetch(`/api/v1/keys/${data.hash}/rotate`, { token: o.management, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('grace_seconds');
    }
  });

  it('an inference key, the admin token or no key on the management routes is 401; another account’s key is 404', async () => {
    const o = await owner();
    const other = await owner();
    for (const token of [o.key, ADMIN_TOKEN, 'sk-tg-v1-not-a-key', undefined]) {
      const res = await gw.fetch('/api/v1/keys', { ...(token ? { token } : {}) });
      expect(res.status).toBe(401);
    }
    const err = await caught(sdk(o.key).apiKeys.list());
    expect(err).toBeInstanceOf(errors.UnauthorizedResponseError);
    expect((err as errors.UnauthorizedResponseError).error.message).toMatch(/management key/);
    expect(await caught(sdk(o.key).apiKeys.create({ requestBody: { name: 'nope' } }))).toBeInstanceOf(errors.UnauthorizedResponseError);

    const client = sdk(o.management);
    // Another account's key, and a management key (its own included), are not this key's to manage.
    for (const hash of [other.hash, other.managementHash, o.managementHash, 'no-such-hash']) {
      expect(await caught(client.apiKeys.get({ hash }))).toBeInstanceOf(errors.NotFoundResponseError);
      expect(await caught(client.apiKeys.update({ hash, requestBody: { disabled: true } }))).toBeInstanceOf(errors.NotFoundResponseError);
      expect(await caught(client.apiKeys.delete({ hash }))).toBeInstanceOf(errors.NotFoundResponseError);
      expect((await gw.fetch(`/api/v1/keys/${hash}/rotate`, { token: o.management, body: {} })).status).toBe(404);
    }
    expect((await chat(other.key)).status).toBe(200); // untouched

    // Bad bodies: a 400 naming the field.
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', limit: -1 }, 'limit'],
      [{ name: 'x', limit_reset: 'hourly' }, 'limit_reset'],
      [{ name: 'x', management: true }, 'management'],
    ] as const) {
      const res = await gw.fetch('/api/v1/keys', { token: o.management, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(field);
    }
  });

  it('never writes a secret to the log', () => {
    expect(secrets.length).toBeGreaterThan(10);
    for (const secret of secrets) expect(gw.log.text).not.toContain(secret);
  });
});
