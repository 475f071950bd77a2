import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecimalText } from '../src/admin/parse-input.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §3 "stored exactly", §4 credits `amount`: "at most 9 decimals and 1,000,000,000 in size,
 * else 400". 123456789.123456789 is inside both bounds but has 18 significant digits, more than a
 * double carries: JSON.parse alone would make 123456789.12345679 of it. The admin and management
 * APIs read money fields from the text the client sent (http/exact-money.ts), the CLI from its argument.
 */
describe('credit amounts and key limits are stored exactly as written', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  const post = (path: string, rawBody: string, method = 'POST') =>
    gw.fetch(path, { method, token: ADMIN_TOKEN, rawBody, headers: { 'content-type': 'application/json' } });

  it('123456789.123456789 credits (9 decimals, below 1e9) are 123456789123456789 nanocredits', async () => {
    const acct = await gw.admin.createAccount({ name: 'precision' });
    const res = await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": 123456789.123456789}');
    expect(res.status).toBe(200);
    const stored = await gw.ledger.getAccount(acct.id);
    expect(stored?.totalPurchased).toBe(123_456_789_123_456_789n);
    expect(stored?.balance).toBe(123_456_789_123_456_789n);
  });

  it('an adjustment of either sign, an exponent, and trailing zeros are read from the digits', async () => {
    const acct = await gw.admin.createAccount({ name: 'forms' });
    expect((await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": 1.5e2}')).status).toBe(200);
    expect((await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"kind": "adjustment", "amount": -99999999.999999999}')).status).toBe(200);
    expect((await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": 2.50000000000000000000}')).status).toBe(200);
    expect((await gw.ledger.getAccount(acct.id))?.balance).toBe(150_000_000_000n - 99_999_999_999_999_999n + 2_500_000_000n);
  });

  it('what a double would hide is refused: a 10th decimal among 18 digits, and a string is not a number', async () => {
    const acct = await gw.admin.createAccount({ name: 'refused' });
    // 1.0000000000000001 is the double 1: read from the double, it would be taken as 1 credit.
    const tenth = await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": 1.0000000000000001}');
    expect(tenth.status).toBe(400);
    expect(((await tenth.json()) as { error: { message: string } }).error.message).toBe('amount: must have at most 9 decimals');
    const text = await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": "5"}');
    expect(text.status).toBe(400);
    expect(((await text.json()) as { error: { message: string } }).error.message).toBe('amount: must be a number');
    expect((await post(`/api/v1/admin/accounts/${acct.id}/credits`, '{"amount": 1e500}')).status).toBe(400);
    expect((await gw.ledger.getAccount(acct.id))?.balance).toBe(0n);
  });

  it('a key limit, set and changed, is stored exactly', async () => {
    const acct = await gw.admin.createAccount({ name: 'limits' });
    const created = await post(`/api/v1/admin/accounts/${acct.id}/keys`, '{"name": "k", "limit": 12345678.123456789}');
    expect(created.status).toBe(201);
    const { data } = (await created.json()) as { data: { hash: string } };
    expect((await gw.ledger.findKey(data.hash))?.limit).toBe(12_345_678_123_456_789n);
    expect((await post(`/api/v1/admin/keys/${data.hash}`, '{"limit": 87654321.987654321}', 'PATCH')).status).toBe(200);
    expect((await gw.ledger.findKey(data.hash))?.limit).toBe(87_654_321_987_654_321n);
  });

  it('the CLI passes its argument as written (DecimalText), not through Number()', async () => {
    const acct = await gw.admin.createAccount({ name: 'cli' });
    await gw.admin.addCredits(acct.id, { amount: new DecimalText('987654321.987654321') });
    expect((await gw.ledger.getAccount(acct.id))?.totalPurchased).toBe(987_654_321_987_654_321n);
  });

  it('the API description documents money as a JSON number only', async () => {
    const doc = (await (await gw.fetch('/api/v1/openapi.json')).json()) as { paths: Record<string, any> };
    const body = doc.paths['/api/v1/admin/accounts/{id}/credits']?.post?.requestBody?.content?.['application/json']?.schema;
    const schema = body?.$ref ? (doc as any).components.schemas[String(body.$ref).split('/').pop() as string] : body;
    expect(schema.properties.amount).toMatchObject({ type: 'number' });
    expect(schema.properties.amount.anyOf).toBeUndefined();
  });
});
