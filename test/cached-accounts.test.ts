import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { CachedAccounts } from '../src/ledger/cached-accounts.js';
import type { Account, Accounts, CreditKind, NewAccount, Writable } from '../src/ledger/ledger.js';
import type { Nano } from '../src/ledger/money.js';
import { TestFeed } from './helpers/test-feed.js';

/** An account as the database holds it: its rows change. */
type StoredAccount = Writable<Account>;

/** The database's accounts, counting reads. */
class StoredAccounts implements Accounts {
  readonly rows = new Map<string, StoredAccount>();
  reads = 0;
  private next = 0;

  async createAccount(input: NewAccount): Promise<Account> {
    const account: StoredAccount = { id: `acct_${++this.next}`, ...input, balance: 0n, totalPurchased: 0n, totalUsage: 0n };
    this.rows.set(account.id, account);
    return { ...account };
  }
  async getAccount(id: string): Promise<Account | undefined> {
    this.reads += 1;
    const row = this.rows.get(id);
    return row && { ...row };
  }
  async addCredits(accountId: string, amount: Nano, kind: CreditKind): Promise<Account | undefined> {
    const row = this.rows.get(accountId);
    if (!row) return undefined;
    row.balance += amount;
    if (kind === 'purchase') row.totalPurchased += amount;
    return { ...row };
  }
  async moneySnapshot(): Promise<undefined> {
    return undefined;
  }
}

async function setup(ttlMs?: number) {
  const clock = new ManualClock(1_000_000);
  const feed = new TestFeed();
  const db = new StoredAccounts();
  const accounts = new CachedAccounts(db, feed, { now: () => clock.now(), ttlMs });
  const { id } = await db.createAccount({ name: 'a', type: 'prepaid', createdAt: 0, freeModelLimitsExempt: false });
  return { clock, feed, db, accounts, id };
}

describe('CachedAccounts', () => {
  it('serves an account from the cache until another process publishes a change to it (credits added there)', async () => {
    const { db, feed, accounts, id } = await setup();
    await accounts.getAccount(id);
    await db.addCredits(id, 5n, 'purchase'); // through another process
    expect((await accounts.getAccount(id))?.balance).toBe(0n);
    expect(db.reads).toBe(1);
    feed.fromElsewhere({ kind: 'account', id });
    expect((await accounts.getAccount(id))?.balance).toBe(5n);
  });

  it('publishes credits added and accounts created, after the write', async () => {
    const { feed, accounts, id } = await setup();
    await accounts.getAccount(id);
    expect((await accounts.addCredits(id, 7n, 'purchase', 0))?.balance).toBe(7n);
    expect((await accounts.getAccount(id))?.totalPurchased).toBe(7n);
    const created = await accounts.createAccount({ name: 'b', type: 'prepaid', createdAt: 0, freeModelLimitsExempt: true });
    expect(feed.published).toEqual([
      { kind: 'account', id },
      { kind: 'account', id: created.id },
    ]);
  });

  it('keeps an account 1 s at most, live feed or not (its totals move with other processes’ charges)', async () => {
    const { clock, db, accounts, id } = await setup(60_000);
    await accounts.getAccount(id);
    db.rows.get(id)!.totalUsage = 3n; // charged by another process: not published
    clock.advance(999);
    expect((await accounts.getAccount(id))?.totalUsage).toBe(0n);
    clock.advance(1);
    expect((await accounts.getAccount(id))?.totalUsage).toBe(3n);
  });

  it('shares one account with every caller, read-only by its type', async () => {
    const { accounts, id } = await setup();
    const account = await accounts.getAccount(id);
    expect(await accounts.getAccount(id)).toBe(account); // the same record, not a copy a caller
    // A caller cannot change what every other caller reads: `npm run typecheck` fails if it could.
    const write = (a: Account) => {
      // @ts-expect-error an Account's fields are read-only
      a.balance = 1_000_000n;
    };
    void write;
  });
});
