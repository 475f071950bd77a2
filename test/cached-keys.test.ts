import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { CachedKeys } from '../src/ledger/cached-keys.js';
import type { KeyPatch, KeyRecord, KeyRotation, KeyUsage, Keys, NewKey, Writable } from '../src/ledger/ledger.js';
import { deferred, TestFeed } from './helpers/test-feed.js';

/** A key as the database holds it: its rows change. */
type StoredKey = Writable<KeyRecord>;

/** The database's keys, counting reads; `hold()` keeps the next read open until the test lets it go. */
class StoredKeys implements Keys {
  readonly rows = new Map<string, StoredKey>();
  /** Secret hash → key hash, as key_secrets holds it. */
  readonly secretRows = new Map<string, string>();
  reads = 0;
  secretReads = 0;
  failWrites = false;
  private held: Array<ReturnType<typeof deferred<void>>> = [];

  hold(): () => void {
    const gate = deferred<void>();
    this.held.push(gate);
    return () => gate.resolve();
  }

  async findKey(hash: string): Promise<KeyRecord | undefined> {
    this.reads += 1;
    const row = this.rows.get(hash);
    const read = row && { ...row }; // read now, answered when let go: a read that a change overtakes
    const gate = this.held.shift();
    if (gate) await gate.promise;
    return read;
  }
  async keyHashOfSecret(secretHash: string): Promise<string | undefined> {
    this.secretReads += 1;
    return this.secretRows.get(secretHash);
  }
  async createKey(key: NewKey): Promise<KeyRecord> {
    const record = stored(key);
    this.rows.set(key.hash, record);
    this.secretRows.set(key.secretHash ?? key.hash, key.hash);
    return { ...record };
  }
  async rotateKey(hash: string, rotation: KeyRotation): Promise<KeyRecord | undefined> {
    const row = this.rows.get(hash);
    if (!row) return undefined;
    row.secrets = [...row.secrets.map((s) => ({ ...s, validUntil: rotation.graceUntil })), { secretHash: rotation.secretHash, validUntil: null }];
    this.secretRows.set(rotation.secretHash, hash);
    return { ...row };
  }
  async updateKey(hash: string, patch: KeyPatch): Promise<KeyRecord | undefined> {
    const row = this.rows.get(hash);
    if (!row) return undefined;
    Object.assign(row, patch);
    if (this.failWrites) throw new Error('connection lost after the write');
    return { ...row };
  }
  async deleteKey(hash: string): Promise<boolean> {
    return this.rows.delete(hash);
  }
  async listKeys(accountId: string): Promise<KeyRecord[]> {
    return [...this.rows.values()].filter((k) => k.accountId === accountId);
  }
  async keyUsage(): Promise<KeyUsage> {
    const zero = { usage: 0n, byokUsage: 0n };
    return { all: zero, daily: zero, weekly: zero, monthly: zero };
  }
}

const stored = (key: NewKey): StoredKey => ({
  ...key,
  disabled: false,
  updatedAt: null,
  management: key.management ?? false,
  secrets: [{ secretHash: key.secretHash ?? key.hash, validUntil: null }],
});

const newKey = (hash: string): NewKey => ({
  hash,
  accountId: 'acct_1',
  name: hash,
  label: hash,
  limit: null,
  limitReset: null,
  includeByokInLimit: false,
  expiresAt: null,
  createdAt: 0,
});

function setup(options: { maxEntries?: number } = {}) {
  const clock = new ManualClock(1_000_000);
  const feed = new TestFeed();
  const db = new StoredKeys();
  const keys = new CachedKeys(db, feed, { now: () => clock.now(), ...options });
  db.rows.set('k1', stored(newKey('k1')));
  db.secretRows.set('k1', 'k1');
  return { clock, feed, db, keys };
}

describe('CachedKeys', () => {
  it('reads a key from the database once, then serves it from the cache', async () => {
    const { db, keys } = setup();
    expect(await keys.findKey('k1')).toMatchObject({ hash: 'k1', disabled: false });
    expect(await keys.findKey('k1')).toMatchObject({ hash: 'k1', disabled: false });
    expect(db.reads).toBe(1);
  });

  it('answers a cached key at once (no promise), and a read that throws at once as a rejection, not kept', async () => {
    const { db, keys } = setup();
    const first = keys.findKey('k1');
    expect(first).toBeInstanceOf(Promise); // read from the database
    expect((await first)?.hash).toBe('k1');
    const hit = keys.findKey('k1');
    expect(hit).not.toBeInstanceOf(Promise); // a hit: the value itself
    expect((hit as KeyRecord | undefined)?.hash).toBe('k1');
    // A database call that throws before it returns a promise: the caller gets a rejection, and the
    // next read tries again rather than finding the failure cached.
    const findKey = db.findKey.bind(db);
    db.findKey = () => {
      throw new Error('connection refused');
    };
    await expect(Promise.resolve(keys.findKey('k2'))).rejects.toThrow('connection refused');
    db.findKey = findKey;
    db.rows.set('k2', stored(newKey('k2')));
    expect((await keys.findKey('k2'))?.hash).toBe('k2');
  });

  it('drops a key when another process publishes a change to it: the next request sees it disabled', async () => {
    const { db, feed, keys } = setup();
    await keys.findKey('k1');
    db.rows.get('k1')!.disabled = true; // another process disables it …
    expect((await keys.findKey('k1'))?.disabled).toBe(false); // … its change has not arrived yet
    feed.fromElsewhere({ kind: 'key', hash: 'k1' });
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
  });

  it('drops every key on a reset (changes may have been missed)', async () => {
    const { db, feed, keys } = setup();
    await keys.findKey('k1');
    db.rows.get('k1')!.limit = 5n;
    feed.fromElsewhere({ kind: 'reset' });
    expect((await keys.findKey('k1'))?.limit).toBe(5n);
  });

  it('publishes its own writes after them, so every process drops the key', async () => {
    const { feed, keys } = setup();
    await keys.updateKey('k1', { disabled: true }, 0);
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
    await keys.deleteKey('k1', 0);
    expect(await keys.findKey('k1')).toBeUndefined();
    expect(feed.published).toEqual([
      { kind: 'key', hash: 'k1' },
      { kind: 'key', hash: 'k1' },
    ]);
  });

  it('caches an unknown key as unknown, and finds it once it is created (createKey publishes)', async () => {
    const { db, feed, keys } = setup();
    expect(await keys.findKey('new')).toBeUndefined();
    expect(await keys.findKey('new')).toBeUndefined();
    expect(db.reads).toBe(1);
    await keys.createKey(newKey('new'));
    expect(feed.published).toEqual([{ kind: 'key', hash: 'new' }]);
    expect(await keys.findKey('new')).toMatchObject({ hash: 'new' });
  });

  it('publishes a write that failed too (it may have landed)', async () => {
    const { db, feed, keys } = setup();
    await keys.findKey('k1');
    db.failWrites = true;
    await expect(keys.updateKey('k1', { disabled: true }, 0)).rejects.toThrow(/connection lost/);
    expect(feed.published).toEqual([{ kind: 'key', hash: 'k1' }]);
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
  });

  it('while the feed is live, re-reads a key after 5 s at most (a safety net)', async () => {
    const { clock, db, keys } = setup();
    await keys.findKey('k1');
    db.rows.get('k1')!.disabled = true; // a change whose message was lost
    clock.advance(4_999);
    expect((await keys.findKey('k1'))?.disabled).toBe(false);
    clock.advance(1);
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
  });

  it('while the feed is not live, uses nothing older than 1 s, even what it cached while live', async () => {
    const { clock, db, feed, keys } = setup();
    await keys.findKey('k1');
    clock.advance(1_000);
    feed.live = false; // the subscription dropped: changes from other processes may be missed
    db.rows.get('k1')!.disabled = true;
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
    expect(db.reads).toBe(2);
    db.rows.get('k1')!.disabled = false;
    clock.advance(999);
    expect((await keys.findKey('k1'))?.disabled).toBe(true); // read 999 ms ago: still used
    clock.advance(1);
    expect((await keys.findKey('k1'))?.disabled).toBe(false);
  });

  it('ages an entry from the start of its read, not its end', async () => {
    const { clock, db, feed, keys } = setup();
    feed.live = false;
    const release = db.hold();
    const reading = keys.findKey('k1');
    clock.advance(800); // a slow read
    release();
    await reading;
    clock.advance(200); // 1 s after the read started
    await keys.findKey('k1');
    expect(db.reads).toBe(2);
  });

  it('a read that a change overtook is answered but not kept', async () => {
    const { db, feed, keys } = setup();
    const release = db.hold();
    const reading = keys.findKey('k1'); // reads the row as it is now (enabled) …
    db.rows.get('k1')!.disabled = true; // … another process disables the key …
    feed.fromElsewhere({ kind: 'key', hash: 'k1' }); // … and its change arrives before the read answers
    release();
    expect((await reading)?.disabled).toBe(false); // the caller that asked before the change gets the old row
    expect((await keys.findKey('k1'))?.disabled).toBe(true); // but it was not cached as fresh
    expect(db.reads).toBe(2);
  });

  it('a read that a reset overtook is not kept either', async () => {
    const { db, feed, keys } = setup();
    const release = db.hold();
    const reading = keys.findKey('k1');
    db.rows.get('k1')!.disabled = true;
    feed.fromElsewhere({ kind: 'reset' });
    release();
    await reading;
    expect((await keys.findKey('k1'))?.disabled).toBe(true);
  });

  it('concurrent reads of one key share one query; one that starts after a change does not join the earlier read', async () => {
    const { db, feed, keys } = setup();
    const release = db.hold();
    const first = keys.findKey('k1');
    const second = keys.findKey('k1');
    expect(db.reads).toBe(1);
    db.rows.get('k1')!.disabled = true;
    feed.fromElsewhere({ kind: 'key', hash: 'k1' });
    const third = keys.findKey('k1');
    expect(db.reads).toBe(2);
    release();
    expect([(await first)?.disabled, (await second)?.disabled, (await third)?.disabled]).toEqual([false, false, true]);
  });

  it('keeps at most maxEntries keys, dropping the least recently used', async () => {
    const { db, keys } = setup({ maxEntries: 2 });
    for (const h of ['a', 'b', 'c']) db.rows.set(h, stored(newKey(h)));
    await keys.findKey('a');
    await keys.findKey('b');
    await keys.findKey('a'); // a is now the most recently used
    await keys.findKey('c'); // b goes
    expect(db.reads).toBe(3);
    await keys.findKey('a');
    expect(db.reads).toBe(3);
    await keys.findKey('b');
    expect(db.reads).toBe(4);
  });

  it('past maxEntries, a key just read stays even when every other was used since; the one used longest ago goes', async () => {
    const { db, keys } = setup({ maxEntries: 2 });
    for (const h of ['a', 'b', 'c']) db.rows.set(h, stored(newKey(h)));
    await keys.findKey('a');
    await keys.findKey('b');
    await keys.findKey('a');
    await keys.findKey('b');
    await keys.findKey('c'); // kept; a goes (b was used after it)
    expect(db.reads).toBe(3);
    await keys.findKey('c');
    await keys.findKey('b');
    expect(db.reads).toBe(3);
    await keys.findKey('a');
    expect(db.reads).toBe(4);
  });

  it('shares one key with every caller, read-only by its type', async () => {
    const { keys } = setup();
    const key = await keys.findKey('k1');
    expect(await keys.findKey('k1')).toBe(key); // the same record, not a copy a caller
    // A caller cannot change what every other caller reads: `npm run typecheck` fails if it could.
    const write = (k: KeyRecord) => {
      // @ts-expect-error a KeyRecord's fields are read-only
      k.disabled = true;
      // @ts-expect-error and so are its secrets'
      k.secrets[0]!.validUntil = 0;
      // @ts-expect-error and the list of them
      k.secrets.push({ secretHash: 'x', validUntil: null });
    };
    void write;
  });

  it('stops listening when closed', async () => {
    const { feed, keys } = setup();
    expect(feed.listening).toBe(2); // the keys, and which key each secret is
    keys.close();
    expect(feed.listening).toBe(0);
  });

  it('reads which key a secret is once, and a rotation publishes the new secret, so a cached "unknown" goes', async () => {
    const { db, feed, keys } = setup();
    expect(await keys.keyHashOfSecret('k1')).toBe('k1');
    expect(await keys.keyHashOfSecret('k1')).toBe('k1');
    expect(await keys.keyHashOfSecret('s2')).toBeUndefined();
    expect(db.secretReads).toBe(2);
    const rotated = await keys.rotateKey('k1', { secretHash: 's2', label: 'l2', at: 0, graceUntil: 0 });
    expect(rotated?.secrets).toEqual([
      { secretHash: 'k1', validUntil: 0 },
      { secretHash: 's2', validUntil: null },
    ]);
    expect(feed.published).toEqual([
      { kind: 'key', hash: 'k1' },
      { kind: 'key', hash: 's2' },
    ]);
    expect(await keys.keyHashOfSecret('s2')).toBe('k1');
  });

  it('a rotation made through another process shows in the key at once: its change drops the cached key', async () => {
    const { db, feed, keys } = setup();
    expect((await keys.findKey('k1'))?.secrets).toEqual([{ secretHash: 'k1', validUntil: null }]);
    await db.rotateKey('k1', { secretHash: 's2', label: 'l2', at: 0, graceUntil: 0 }); // another process rotates …
    feed.fromElsewhere({ kind: 'key', hash: 'k1' }); // … and its change arrives
    expect((await keys.findKey('k1'))?.secrets.find((s) => s.secretHash === 'k1')?.validUntil).toBe(0);
  });
});
