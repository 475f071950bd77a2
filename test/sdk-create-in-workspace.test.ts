import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// CONTRACT §9 has account owners provision keys "with the official SDK (@openrouter/sdk:
// apiKeys.list/create/...)". The SDK's create body may name `workspace_id`; the gateway reports the
// account's id as every key's workspace and takes it on GET /api/v1/keys, so POST /api/v1/keys takes
// it too: the key's own account, or 404 for any other (it was refused as an unknown field).

describe('apiKeys.create with the workspace the gateway reports', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 9));
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({}, clock);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('creating a key in the workspace the list reported (its own) works, as listing that workspace does', async () => {
    const acct = await gw.account(10);
    const mk = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
    const sdk = new OpenRouter({ serverURL: `${gw.base}/api/v1`, apiKey: mk, retryConfig: { strategy: 'none' } });
    const { data } = await sdk.apiKeys.list({});
    const workspaceId = data[0]?.workspaceId as string;
    expect(workspaceId).toBe(acct.id);
    // The list takes the workspace...
    expect((await sdk.apiKeys.list({ workspaceId })).data.length).toBe(1);
    // ...and so should create, for the same (own) workspace.
    const created = await sdk.apiKeys.create({ requestBody: { name: 'ci', workspaceId } });
    expect(created.data.workspaceId).toBe(acct.id);
    // Another workspace holds none of this key's keys, and gets none made in it.
    const other = await gw.fetch('/api/v1/keys', { token: mk, body: { name: 'elsewhere', workspace_id: 'acct-someone-else' } });
    expect(other.status).toBe(404);
    expect((await sdk.apiKeys.list({})).data.map((k) => k.name)).not.toContain('elsewhere');
  });
});
