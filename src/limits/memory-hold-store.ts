import type { Clock } from '../clock.js';
import type { Nano } from '../ledger/money.js';
import { keyPeriodName } from '../ledger/periods.js';
import { ExpiryHeap } from './expiry-heap.js';
import { SettlingQueue } from './settling-queue.js';
import type { AccountSnapshot, AdmitRequest, AdmitResult, HoldStore, HoldView, LedgerUpdate, MoneyView, SettleRequest } from './hold-store.js';
import { budgetOf, keyPeriodUsage, keyUsed, moneyOf, type UsageField } from './money-view.js';
import { PendingCharges } from './pending-charges.js';

/** A running request's hold: it counts until its lease ends (renewed while the request runs). */
interface Hold {
  amount: Nano;
  until: number;
  version: number;
}

/** A scope's running holds with their total and a heap of lease ends (O(log n) a request). */
interface Scope {
  total: Nano;
  holds: Map<string, Hold>;
  expiries: ExpiryHeap;
}

/** A key's usage in one period, with when it was last read from the ledger. */
interface KeyField extends UsageField {
  readAt: number;
}

interface AccountState {
  account: AccountSnapshot | undefined;
  /** When the account's snapshot was last read from the ledger (its own commits do not count: see `snapshotTtlMs`). */
  readAt: number;
  /** Key usage snapshots by `hash\u0000period`. */
  keys: Map<string, KeyField>;
  pending: PendingCharges;
  /**
   * The running holds by what they count against: the in-flight budget, the balance, and each key's
   * limit by the key's hash (each scope a field or keyed by a string the request already has, so no
   * scope name is built a request).
   */
  budget: Scope;
  balance: Scope;
  keyScopes: Map<string, Scope>;
  /** The in-flight budget's settling holds: ended requests' actual costs, for the settlement window. */
  settling: SettlingQueue;
}

/** Accounts kept at most before the idle ones are forgotten (their snapshots reload from the ledger). */
const MAX_ACCOUNTS = 100_000;

const newScope = (): Scope => ({ total: 0n, holds: new Map(), expiries: new ExpiryHeap() });

export interface MemoryHoldStoreOptions {
  /**
   * How long a snapshot read from the ledger stands before it is read again. This process's own
   * commits keep it up to date, but no one tells it of another process's writes on the same database
   * (the CLI's `credits add`, `ledger replay`): they show once it is read again. Without it, never.
   */
  snapshotTtlMs?: number;
}

/**
 * Holds and the money view in this process: one node's limits, exact, with no round trip. The same
 * rules as the Redis store (see hold-store.ts), on this process's clock.
 */
export class MemoryHoldStore implements HoldStore {
  private readonly accounts = new Map<string, AccountState>();
  private version = 0;
  private readonly snapshotTtlMs: number;

  constructor(
    private readonly clock: Clock,
    options: MemoryHoldStoreOptions = {},
  ) {
    this.snapshotTtlMs = options.snapshotTtlMs ?? Infinity;
  }

  /** The snapshot read at `readAt` is still to be believed at `now`. */
  private fresh(readAt: number, now: number): boolean {
    return now - readAt < this.snapshotTtlMs;
  }

  private state(accountId: string): AccountState {
    let s = this.accounts.get(accountId);
    if (!s) {
      if (this.accounts.size >= MAX_ACCOUNTS) this.forgetIdle();
      s = {
        account: undefined,
        readAt: 0,
        keys: new Map(),
        pending: new PendingCharges(),
        budget: newScope(),
        balance: newScope(),
        keyScopes: new Map(),
        settling: new SettlingQueue(),
      };
      this.accounts.set(accountId, s);
    }
    return s;
  }

  /** Forgets the accounts that hold nothing: their snapshots are read from the ledger again when needed. */
  private forgetIdle(): void {
    const now = this.clock.now();
    for (const [id] of this.accounts) {
      const s = this.live(id, now);
      const holdsNothing = s.budget.holds.size === 0 && s.balance.holds.size === 0 && s.keyScopes.size === 0;
      if (holdsNothing && s.pending.size === 0 && s.settling.size === 0) this.accounts.delete(id);
    }
  }

  /** The account's state with every lapsed hold and pending charge dropped. */
  private live(accountId: string, now: number): AccountState {
    const s = this.state(accountId);
    if (s.pending.expire(now)) {
      // A charge's process died before it was recorded here: the ledger may have it or not; reload.
      s.account = undefined;
      s.keys.clear();
    }
    this.lapse(s.budget, now);
    this.lapse(s.balance, now);
    for (const [hash, scope] of s.keyScopes) {
      this.lapse(scope, now);
      if (scope.holds.size === 0) s.keyScopes.delete(hash);
    }
    s.settling.expire(now);
    return s;
  }

  /** Drops the scope's holds whose lease ended at or before `now`. */
  private lapse(scope: Scope, now: number): void {
    for (let e = scope.expiries.peek(); e && e.at <= now; e = scope.expiries.peek()) {
      scope.expiries.pop();
      const h = scope.holds.get(e.id);
      if (h && h.version === e.version) this.drop(scope, e.id, h);
    }
  }

  private keyScope(s: AccountState, hash: string): Scope {
    let scope = s.keyScopes.get(hash);
    if (!scope) {
      scope = newScope();
      s.keyScopes.set(hash, scope);
    }
    return scope;
  }

  private drop(scope: Scope, id: string, h: Hold): void {
    scope.holds.delete(id);
    scope.total -= h.amount;
  }

  private put(scope: Scope, id: string, amount: Nano, until: number): void {
    const old = scope.holds.get(id);
    if (old) this.drop(scope, id, old);
    const version = ++this.version;
    scope.holds.set(id, { amount, until, version });
    scope.total += amount;
    scope.expiries.push({ at: until, id, version });
  }

  private remove(scope: Scope | undefined, id: string): Hold | undefined {
    const h = scope?.holds.get(id);
    if (!scope || !h) return undefined;
    this.drop(scope, id, h);
    if (scope.expiries.size > 2 * scope.holds.size + 64) {
      const fresh = new ExpiryHeap();
      for (const [hid, hold] of scope.holds) fresh.push({ at: hold.until, id: hid, version: hold.version });
      scope.expiries = fresh;
    }
    return h;
  }

  /** What the in-flight budget holds: running requests' estimates and settling actual costs. */
  private budgetHeld(s: AccountState): Nano {
    return s.budget.total + s.settling.total;
  }

  private budgetHolds(s: AccountState): HoldView[] {
    const holds: HoldView[] = [];
    for (const h of s.budget.holds.values()) holds.push({ amount: h.amount, until: h.until, settling: false });
    for (const h of s.settling.entries()) holds.push({ amount: h.amount, until: h.until, settling: true });
    return holds;
  }

  admit(req: AdmitRequest): AdmitResult {
    const now = this.clock.now();
    const s = this.live(req.accountId, now);
    const found = req.key ? s.keys.get(keyPeriodName(req.key.hash, req.key.period)) : undefined;
    const keyField = found && this.fresh(found.readAt, now) ? found : undefined;
    const account = s.account && this.fresh(s.readAt, now) ? s.account : undefined;
    if (!account || (req.key && !keyField)) return { ok: false, refused: 'snapshot', account: !account, key: req.key !== undefined && !keyField };
    const { balance } = moneyOf(account, s.pending.cost);
    if (req.refuseNegative && balance < 0n) return { ok: false, refused: 'negative', balance };
    if (req.key && keyField) {
      const used = keyUsed(keyField, req.key.includeByok, s.pending.keyUsage(req.key.hash, req.key.period));
      const held = s.keyScopes.get(req.key.hash)?.total ?? 0n;
      if (used + held + req.key.amount > req.key.limit) return { ok: false, refused: 'key', used, held };
    }
    if (req.balance !== undefined) {
      const held = s.balance.total;
      const available = balance > 0n ? balance : 0n;
      if (held + req.balance > available) return { ok: false, refused: 'balance', balance, held };
    }
    const budget = req.budget ? budgetOf(req.budget, balance) : undefined;
    if (req.budget && budget !== undefined) {
      if (req.budget.amount > budget) return { ok: false, refused: 'weight', budget };
      const held = this.budgetHeld(s);
      if (held + req.budget.amount > budget) return { ok: false, refused: 'budget', budget, held, holds: this.budgetHolds(s), now };
    }
    const until = now + req.leaseMs;
    if (req.key) this.put(this.keyScope(s, req.key.hash), req.id, req.key.amount, until);
    if (req.balance !== undefined) this.put(s.balance, req.id, req.balance, until);
    if (req.budget && budget !== undefined) {
      s.settling.take(req.id); // a hold is kept per request id, whatever it was
      this.put(s.budget, req.id, req.budget.amount, until);
    }
    return { ok: true, now, balance };
  }

  settle(req: SettleRequest): void {
    const now = this.clock.now();
    const s = this.live(req.accountId, now);
    const hadBudget = this.remove(s.budget, req.id) !== undefined || s.settling.take(req.id);
    if (hadBudget && req.cost > 0n) s.settling.add(req.id, req.cost, now + req.windowMs);
    this.remove(s.balance, req.id);
    // An emptied key scope goes at the account's next live() (as a lapsed one does).
    this.remove(s.keyScopes.get(req.keyHash), req.id);
    if (req.cost > 0n || req.byokUsage > 0n) {
      s.pending.set(req.id, { cost: req.cost, byokUsage: req.byokUsage, keyHash: req.keyHash, periods: req.periods }, now + req.leaseMs);
    }
  }

  async renew(accountId: string, id: string, leaseMs: number): Promise<void> {
    const now = this.clock.now();
    const s = this.live(accountId, now);
    const until = now + leaseMs;
    for (const scope of [s.budget, s.balance, ...s.keyScopes.values()]) {
      const h = scope.holds.get(id);
      if (h && h.until < until) this.put(scope, id, h.amount, until);
    }
    s.pending.extend(id, until);
  }

  async record(update: LedgerUpdate): Promise<void> {
    const s = this.live(update.accountId, this.clock.now());
    // A fresh read stands for `snapshotTtlMs` whichever snapshot is kept: a commit newer than the read
    // read its rows back after it. A commit's own update leaves the time of the last read as it was.
    const readAt = update.readAt;
    if (update.account) {
      if (!s.account || update.account.seq > s.account.seq) s.account = { ...update.account };
      if (readAt !== undefined && readAt > s.readAt) s.readAt = readAt;
    }
    for (const key of update.keys ?? []) {
      for (const p of key.periods) {
        const field = keyPeriodName(key.hash, p.period);
        const old = s.keys.get(field);
        if (!old || p.seq > old.seq) s.keys.set(field, { seq: p.seq, usage: p.usage, byokUsage: p.byokUsage, readAt: Math.max(readAt ?? 0, old?.readAt ?? 0) });
        else if (readAt !== undefined && readAt > old.readAt) old.readAt = readAt;
      }
    }
    for (const id of update.committed ?? []) s.pending.delete(id);
  }

  async view(accountId: string, key?: { hash: string; periods: readonly string[] }): Promise<MoneyView | undefined> {
    const now = this.clock.now();
    const s = this.live(accountId, now);
    if (!s.account || !this.fresh(s.readAt, now)) return undefined;
    const { balance, totalUsage } = moneyOf(s.account, s.pending.cost);
    let keyUsage: MoneyView['keyUsage'];
    if (key) {
      keyUsage = new Map();
      for (const period of key.periods) {
        const field = s.keys.get(keyPeriodName(key.hash, period));
        if (!field || !this.fresh(field.readAt, now)) {
          keyUsage = undefined;
          break;
        }
        keyUsage.set(period, keyPeriodUsage(field, s.pending.keyUsage(key.hash, period)));
      }
    }
    return { balance, totalUsage, keyUsage, budgetHeld: this.budgetHeld(s), runningHeld: s.balance.total };
  }

  async close(): Promise<void> {
    this.accounts.clear();
  }
}
