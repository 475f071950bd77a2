import { isPromise, type Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { Account, Accounts, KeyUsage } from '../ledger/ledger.js';
import { periodKeys } from '../ledger/periods.js';
import type { AdmitRequest, AdmitResult, HoldStore, MoneyView } from '../limits/hold-store.js';
import { limitsUnavailable } from '../limits/limits-unavailable.js';

/** How many times admission reloads a snapshot that another process's write keeps replacing. */
const LOAD_TRIES = 3;

const goneAccount = () => new GatewayError('unauthorized', 'this API key belongs to no account');

/**
 * An account's money as every process sees it: the hold store's view (ledger snapshot less pending
 * charges), loaded from the ledger when the store has none (first use, expired, read too long ago for
 * the in-process store, or Redis restarted).
 */
export class AccountMoney {
  constructor(
    private readonly holds: HoldStore,
    private readonly ledger: Pick<Accounts, 'moneySnapshot'>,
    private readonly clock: Clock,
  ) {}

  /**
   * Reads the account (and the key's current periods) from the ledger into the store. The store
   * applies what it is given in order: the admission or view asked next sees the snapshot without
   * waiting for it to be written first (the Redis store sends both in one call).
   */
  private async load(accountId: string, keyHash: string | undefined): Promise<void> {
    const p = periodKeys(this.clock.now());
    const snapshot = await this.ledger.moneySnapshot(accountId, keyHash ? { hash: keyHash, periods: [p.all, p.daily, p.weekly, p.monthly] } : undefined);
    if (!snapshot) throw goneAccount();
    // Stamped when the read is back: a slow read (a journal backlog applied first) still stands for
    // the admission that asked for it, rather than arriving stale and being read again and again.
    void this.holds.record({ ...snapshot, readAt: this.clock.now() });
  }

  /**
   * One atomic admission against the store, loading the snapshots it lacks first. At once when the
   * store answers at once and has them (awaitable.ts).
   */
  admit(req: AdmitRequest): Awaitable<AdmitResult> {
    const first = this.holds.admit(req);
    if (!isPromise(first) && (first.ok || first.refused !== 'snapshot')) return first;
    return this.admitLoading(req, first);
  }

  private async admitLoading(req: AdmitRequest, first: Awaitable<AdmitResult>): Promise<AdmitResult> {
    for (let i = 0; i < LOAD_TRIES; i++) {
      const r = await (i === 0 ? first : this.holds.admit(req));
      if (r.ok || r.refused !== 'snapshot') return r;
      await this.load(req.accountId, r.key ? req.key?.hash : undefined);
    }
    throw limitsUnavailable(new Error('the limits store keeps no snapshot of the account'));
  }

  /** The account's balance and total usage, the key's usage per period when asked, and its in-flight holds. */
  async view(accountId: string, keyHash?: string): Promise<MoneyView & { key: KeyUsage | undefined }> {
    const p = periodKeys(this.clock.now());
    const key = keyHash ? { hash: keyHash, periods: [p.all, p.daily, p.weekly, p.monthly] } : undefined;
    for (let i = 0; i < LOAD_TRIES; i++) {
      const v = await this.holds.view(accountId, key);
      if (v && (!key || v.keyUsage)) {
        const u = (period: string) => v.keyUsage?.get(period) ?? { usage: 0n, byokUsage: 0n };
        return { ...v, key: key ? { all: u(p.all), daily: u(p.daily), weekly: u(p.weekly), monthly: u(p.monthly) } : undefined };
      }
      await this.load(accountId, keyHash);
    }
    throw limitsUnavailable(new Error('the limits store keeps no snapshot of the account'));
  }

  /** The account's money view with the key's usage per period. */
  async keyView(accountId: string, keyHash: string): Promise<MoneyView & { key: KeyUsage }> {
    const v = await this.view(accountId, keyHash);
    if (!v.key) throw limitsUnavailable(new Error('the limits store answered without the key'));
    return { ...v, key: v.key };
  }

  /** The account with its balance and total usage as every process sees them. */
  async account(account: Account): Promise<Account> {
    const v = await this.view(account.id);
    return { ...account, balance: v.balance, totalUsage: v.totalUsage };
  }
}
