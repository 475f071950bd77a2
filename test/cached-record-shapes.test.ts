import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { CachedAccounts } from '../src/ledger/cached-accounts.js';
import { CachedKeys } from '../src/ledger/cached-keys.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { migrateToLatest } from '../src/ledger/migrations.js';
import { TestFeed } from './helpers/test-feed.js';

/**
 * The key and the account a request reads come from the caches, which read them again every second
 * on SQLite (every 5 s with Redis). Code on the request's path is optimised for the shape (V8's map)
 * of the records it has seen: a record read again must have the same one, or every function that
 * reads it is deoptimised and compiled again. Frozen copies did not (a map of their own nearly every
 * time, in the gateway: nine deoptimisations a second; bench/README.md, thirty-sixth session).
 * %HaveSameMap: vitest runs with --allow-natives-syntax.
 */
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

describe('records read again through the caches, from the SQLite ledger', () => {
  let ledger: KyselyLedger;
  beforeAll(async () => {
    const db = openDatabase('sqlite::memory:');
    await migrateToLatest(db);
    ledger = new KyselyLedger(db);
  });
  afterAll(() => ledger.close());

  it('a key and its secrets read again have the shape they had', async () => {
    const account = await ledger.createAccount({ name: 'a', type: 'prepaid', createdAt: 0, freeModelLimitsExempt: false });
    const base = { accountId: account.id, name: 'k', label: 'sk-…', limit: 5n, limitReset: 'daily' as const, includeByokInLimit: false, createdAt: 0 };
    await ledger.createKey({ ...base, hash: 'shape-key', expiresAt: null });
    const feed = new TestFeed();
    const keys = new CachedKeys(ledger, feed, { now: () => 0 });
    const first = (await keys.findKey('shape-key'))!;
    for (let i = 0; i < 200; i++) {
      feed.fromElsewhere({ kind: 'key', hash: 'shape-key' }); // dropped: the next read is a new record
      const again = (await keys.findKey('shape-key'))!;
      expect(again).not.toBe(first);
      expect(haveSameMap(again, first), `read ${i}`).toBe(true);
      expect(haveSameMap(again.secrets[0]!, first.secrets[0]!), `read ${i}, its secret`).toBe(true);
    }
    keys.close();
  });

  it('an account read again has the shape it had', async () => {
    const { id } = await ledger.createAccount({ name: 'b', type: 'prepaid', createdAt: 0, freeModelLimitsExempt: false });
    const clock = new ManualClock(0);
    const accounts = new CachedAccounts(ledger, new TestFeed(), { now: () => clock.now() });
    const first = (await accounts.getAccount(id))!;
    for (let i = 0; i < 200; i++) {
      clock.advance(1000); // past the cache's second: the next read is a new record
      const again = (await accounts.getAccount(id))!;
      expect(again).not.toBe(first);
      expect(haveSameMap(again, first), `read ${i}`).toBe(true);
    }
    accounts.close();
  });
});
