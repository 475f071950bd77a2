import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import type { ByokSecrets } from '../src/ledger/ledger.js';
import { ByokVault } from '../src/security/byok-vault.js';
import { SecretBox } from '../src/security/secret-box.js';
import { TestFeed } from './helpers/test-feed.js';

/** The database's sealed secrets, counting reads. */
class StoredSecrets implements ByokSecrets {
  readonly rows = new Map<string, Map<string, string>>();
  reads = 0;
  async putByokSecret(accountId: string, provider: string, ciphertext: string): Promise<void> {
    const m = this.rows.get(accountId) ?? new Map<string, string>();
    m.set(provider, ciphertext);
    this.rows.set(accountId, m);
  }
  async deleteByokSecret(accountId: string, provider: string): Promise<boolean> {
    return this.rows.get(accountId)?.delete(provider) ?? false;
  }
  async byokSecrets(accountId: string): Promise<Map<string, string>> {
    this.reads += 1;
    return new Map(this.rows.get(accountId));
  }
}

function setup() {
  const clock = new ManualClock(1_000_000);
  const feed = new TestFeed();
  const db = new StoredSecrets();
  const box = new SecretBox(Buffer.alloc(32, 3).toString('base64'));
  const vault = new ByokVault(db, box, feed, { now: () => clock.now() });
  return { clock, feed, db, box, vault };
}

describe('ByokVault', () => {
  it('stores keys sealed, opens them for the account, and publishes each put and removal', async () => {
    const { db, feed, vault } = setup();
    await vault.put('acct_1', 'acme', 'sk-own');
    expect(db.rows.get('acct_1')?.get('acme')).not.toContain('sk-own');
    expect(await vault.keysFor('acct_1')).toEqual(new Map([['acme', 'sk-own']]));
    expect(await vault.remove('acct_1', 'acme')).toBe(true);
    expect(await vault.keysFor('acct_1')).toEqual(new Map());
    expect(feed.published).toEqual([
      { kind: 'byok', accountId: 'acct_1' },
      { kind: 'byok', accountId: 'acct_1' },
    ]);
  });

  it('reuses opened keys until another process publishes a change to them', async () => {
    const { db, feed, box, vault } = setup();
    expect(await vault.keysFor('acct_1')).toEqual(new Map());
    await db.putByokSecret('acct_1', 'acme', box.seal('sk-put-elsewhere')); // through another process
    expect(await vault.keysFor('acct_1')).toEqual(new Map());
    expect(db.reads).toBe(1);
    feed.fromElsewhere({ kind: 'byok', accountId: 'acct_1' });
    expect(await vault.keysFor('acct_1')).toEqual(new Map([['acme', 'sk-put-elsewhere']]));
  });

  it('while the feed is not live, reuses them 1 s at most', async () => {
    const { clock, db, feed, box, vault } = setup();
    await vault.keysFor('acct_1');
    feed.live = false;
    await db.putByokSecret('acct_1', 'acme', box.seal('sk-late'));
    clock.advance(999);
    expect((await vault.keysFor('acct_1')).size).toBe(0);
    clock.advance(1);
    expect((await vault.keysFor('acct_1')).get('acme')).toBe('sk-late');
  });
});
