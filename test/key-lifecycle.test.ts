import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import type { NewKey } from '../src/ledger/ledger.js';
import { migrateToLatest } from '../src/ledger/migrations.js';
import { chargeMaker } from './helpers/charges.js';
import { databaseTargets, migrateUpTo } from './helpers/database.js';

const T0 = Date.UTC(2026, 10, 18, 10);
const MIN = 60_000;

const charge = chargeMaker('life', T0);

const newKey = (accountId: string, hash: string, extra: Partial<NewKey> = {}): NewKey => ({
  hash,
  accountId,
  name: hash,
  label: `label-${hash}`,
  limit: 5n,
  limitReset: 'daily',
  includeByokInLimit: false,
  expiresAt: null,
  createdAt: T0,
  ...extra,
});

// Keys through their life, on every ledger backend (SQLite always, PostgreSQL when DATABASE_URL is set).
for (const target of databaseTargets) {
  describe(`keys through their life, ledger on ${target.name}`, () => {
    let ledger: KyselyLedger;
    let drop: () => Promise<void>;
    let url: string;

    beforeAll(async () => {
      const created = await target.create();
      drop = created.drop;
      url = created.url;
      const db = openDatabase(url);
      await migrateToLatest(db);
      ledger = new KyselyLedger(db);
    });
    afterAll(async () => {
      await ledger.close();
      await drop();
    });

    const newAccount = () => ledger.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });

    it('a new key is found by its hash and by its secret, which is its hash unless told otherwise', async () => {
      const a = await newAccount();
      const plain = await ledger.createKey(newKey(a.id, `plain-${target.name}`));
      expect(plain).toMatchObject({ management: false, updatedAt: null, secrets: [{ secretHash: `plain-${target.name}`, validUntil: null }] });
      expect(await ledger.keyHashOfSecret(`plain-${target.name}`)).toBe(plain.hash);
      const managed = await ledger.createKey(newKey(a.id, `mgmt-${target.name}`, { secretHash: `mgmt-secret-${target.name}`, management: true }));
      expect(managed.management).toBe(true);
      expect(await ledger.keyHashOfSecret(`mgmt-secret-${target.name}`)).toBe(managed.hash);
      expect(await ledger.keyHashOfSecret('never-issued')).toBeUndefined();
    });

    it('a rotation gives the key a new secret and keeps its hash, usage and limits; the old secret has its grace period', async () => {
      const a = await newAccount();
      const hash = `rot-${target.name}`;
      await ledger.createKey(newKey(a.id, hash));
      await ledger.charge(charge(a.id, hash, 7n));
      const rotated = await ledger.rotateKey(hash, { secretHash: `${hash}-2`, label: 'label-2', at: T0, graceUntil: T0 + 10 * MIN });
      expect(rotated).toMatchObject({ hash, label: 'label-2', limit: 5n, limitReset: 'daily', updatedAt: T0 });
      expect(rotated?.secrets).toEqual([
        { secretHash: hash, validUntil: T0 + 10 * MIN },
        { secretHash: `${hash}-2`, validUntil: null },
      ]);
      expect(await ledger.keyHashOfSecret(`${hash}-2`)).toBe(hash);
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(7n);

      // A second rotation, with a shorter grace: every earlier secret stops by its end at the latest.
      const again = await ledger.rotateKey(hash, { secretHash: `${hash}-3`, label: 'label-3', at: T0 + MIN, graceUntil: T0 + 2 * MIN });
      expect(again?.secrets).toEqual([
        { secretHash: hash, validUntil: T0 + 2 * MIN },
        { secretHash: `${hash}-2`, validUntil: T0 + 2 * MIN },
        { secretHash: `${hash}-3`, validUntil: null },
      ]);
      // A longer grace does not lengthen an earlier one; secrets whose time is over go.
      const third = await ledger.rotateKey(hash, { secretHash: `${hash}-4`, label: 'label-4', at: T0 + 3 * MIN, graceUntil: T0 + 60 * MIN });
      expect(third?.secrets).toEqual([
        { secretHash: `${hash}-3`, validUntil: T0 + 60 * MIN },
        { secretHash: `${hash}-4`, validUntil: null },
      ]);
      expect(await ledger.keyHashOfSecret(hash)).toBeUndefined();
      // Without grace, every earlier secret goes at once.
      const now = await ledger.rotateKey(hash, { secretHash: `${hash}-5`, label: 'label-5', at: T0 + 4 * MIN, graceUntil: T0 + 4 * MIN });
      expect(now?.secrets).toEqual([{ secretHash: `${hash}-5`, validUntil: null }]);
      expect(await ledger.rotateKey('no-such-key', { secretHash: 'x', label: 'x', at: T0, graceUntil: T0 })).toBeUndefined();
    });

    it('a deleted key is gone for the key methods, and its usage and generations stay', async () => {
      const a = await newAccount();
      const hash = `del-${target.name}`;
      await ledger.createKey(newKey(a.id, hash));
      const c = charge(a.id, hash, 11n);
      await ledger.charge(c);
      expect(await ledger.deleteKey(hash, T0 + MIN)).toBe(true);
      expect(await ledger.deleteKey(hash, T0 + MIN)).toBe(false);
      expect(await ledger.findKey(hash)).toBeUndefined();
      expect(await ledger.keyHashOfSecret(hash)).toBeUndefined();
      expect(await ledger.listKeys(a.id)).toEqual([]);
      expect(await ledger.updateKey(hash, { name: 'x' }, T0)).toBeUndefined();
      expect(await ledger.rotateKey(hash, { secretHash: `${hash}-2`, label: 'x', at: T0, graceUntil: T0 })).toBeUndefined();
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(11n);
      expect(await ledger.getGeneration(c.id)).toMatchObject({ keyHash: hash, totalCost: 11n });
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(11n);
      // A charge of a request that was running when the key was deleted is still written.
      await ledger.charge(charge(a.id, hash, 2n));
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(13n);
    });

    it('sets and clears an expiry, and stamps each change', async () => {
      const a = await newAccount();
      const hash = `exp-${target.name}`;
      await ledger.createKey(newKey(a.id, hash));
      expect(await ledger.updateKey(hash, { expiresAt: T0 + 60 * MIN }, T0 + MIN)).toMatchObject({ expiresAt: T0 + 60 * MIN, updatedAt: T0 + MIN });
      expect(await ledger.updateKey(hash, { expiresAt: null }, T0 + 2 * MIN)).toMatchObject({ expiresAt: null, updatedAt: T0 + 2 * MIN });
    });

    it('lists keys oldest first, a page at a time, with or without disabled and management keys', async () => {
      const a = await newAccount();
      for (let i = 0; i < 5; i++) await ledger.createKey(newKey(a.id, `list-${target.name}-${i}`, { createdAt: T0 + i }));
      await ledger.createKey(newKey(a.id, `list-${target.name}-m`, { createdAt: T0 + 10, management: true }));
      await ledger.updateKey(`list-${target.name}-1`, { disabled: true }, T0);
      await ledger.deleteKey(`list-${target.name}-2`, T0);
      const names = (keys: Array<{ hash: string }>) => keys.map((k) => k.hash.replace(`list-${target.name}-`, ''));
      expect(names(await ledger.listKeys(a.id))).toEqual(['0', '1', '3', '4', 'm']);
      expect(names(await ledger.listKeys(a.id, { management: false }))).toEqual(['0', '1', '3', '4']);
      expect(names(await ledger.listKeys(a.id, { management: true }))).toEqual(['m']);
      expect(names(await ledger.listKeys(a.id, { management: false, includeDisabled: false }))).toEqual(['0', '3', '4']);
      expect(names(await ledger.listKeys(a.id, { management: false, page: { offset: 1, limit: 2 } }))).toEqual(['1', '3']);
      expect(names(await ledger.listKeys(a.id, { management: false, page: { offset: 4, limit: 2 } }))).toEqual([]);
      const [first] = await ledger.listKeys(a.id);
      expect(first?.secrets).toEqual([{ secretHash: `list-${target.name}-0`, validUntil: null }]);
    });

    it('a key made before keys had secrets of their own keeps working after the migration: its secret is its hash', async () => {
      const fresh = await target.create();
      const db = openDatabase(fresh.url);
      try {
        await migrateUpTo(db, '0004');
        await sql`INSERT INTO accounts (id, name, type, balance, total_purchased, total_usage, created_at, free_model_limits_exempt)
          VALUES ('acct_old', 'old', 'prepaid', 0, 0, 0, ${T0}, 0)`.execute(db);
        await sql`INSERT INTO api_keys (hash, account_id, name, label, disabled, limit_amount, limit_reset, include_byok_in_limit, expires_at, created_at)
          VALUES ('old-hash', 'acct_old', 'old', 'sk-tg-v1-old...key', 0, 9, 'weekly', 0, NULL, ${T0})`.execute(db);
        await migrateToLatest(db);
        const l = new KyselyLedger(db);
        expect(await l.keyHashOfSecret('old-hash')).toBe('old-hash');
        expect(await l.findKey('old-hash')).toMatchObject({
          hash: 'old-hash',
          limit: 9n,
          limitReset: 'weekly',
          management: false,
          updatedAt: null,
          secrets: [{ secretHash: 'old-hash', validUntil: null }],
        });
      } finally {
        await db.destroy();
        await fresh.drop();
      }
    });
  });
}
