import type { Clock } from '../clock.js';
import type { Nano } from '../ledger/money.js';
import { keyPeriodName } from '../ledger/periods.js';
import { SettlingQueue } from './settling-queue.js';
import type { AccountSnapshot, AdmitRequest, AdmitResult, HoldStore, HoldView, LedgerUpdate, MoneyView, SettleRequest } from './hold-store.js';
import { budgetOf, keyPeriodUsage, keyUsed, moneyOf, type UsageField } from './money-view.js';
import { PendingCharges } from './pending-charges.js';
import { RequestHolds } from './request-holds.js';

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
  /** The running requests' holds: on the in-flight budget, the balance and each key's limit. */
  running: RequestHolds;
  /** The in-flight budget's settling holds: ended requests' actual costs, for the settlement window. */
  settling: SettlingQueue;
}

/** Accounts kept at most before the idle ones are forgotten (their snapshots reload from the ledger). */
const MAX_ACCOUNTS = 100_000;

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
        running: new RequestHolds(),
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
      if (s.running.size === 0 && s.pending.size === 0 && s.settling.size === 0) this.accounts.delete(id);
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
    s.running.lapse(now);
    s.settling.expire(now);
    return s;
  }

  /** What the in-flight budget holds: running requests' estimates and settling actual costs. */
  private budgetHeld(s: AccountState): Nano {
    return s.running.budgetHeld + s.settling.total;
  }

  private budgetHolds(s: AccountState): HoldView[] {
    const holds = s.running.budgetHolds();
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
      const held = s.running.keyHeld(req.key.hash);
      if (used + held + req.key.amount > req.key.limit) return { ok: false, refused: 'key', used, held };
    }
    if (req.balance !== undefined) {
      const held = s.running.balanceHeld;
      const available = balance > 0n ? balance : 0n;
      if (held + req.balance > available) return { ok: false, refused: 'balance', balance, held };
    }
    const budget = req.budget ? budgetOf(req.budget, balance) : undefined;
    if (req.budget && budget !== undefined) {
      if (req.budget.amount > budget) return { ok: false, refused: 'weight', budget };
      const held = this.budgetHeld(s);
      if (held + req.budget.amount > budget) return { ok: false, refused: 'budget', budget, held, holds: this.budgetHolds(s), now };
    }
    const holdsBudget = req.budget !== undefined && budget !== undefined;
    if (holdsBudget) s.settling.take(req.id); // a hold is kept per request id, whatever it was
    s.running.hold(req.id, now + req.leaseMs, req.key?.hash, req.key?.amount ?? 0n, req.balance, holdsBudget ? req.budget?.amount : undefined);
    return { ok: true, now, balance };
  }

  settle(req: SettleRequest): void {
    const now = this.clock.now();
    const s = this.live(req.accountId, now);
    const hadBudget = s.running.release(req.id, req.keyHash) || s.settling.take(req.id);
    if (hadBudget && req.cost > 0n) s.settling.add(req.id, req.cost, now + req.windowMs);
    if (req.cost > 0n || req.byokUsage > 0n) {
      s.pending.set(req.id, { cost: req.cost, byokUsage: req.byokUsage, keyHash: req.keyHash, periods: req.periods }, now + req.leaseMs);
    }
  }

  async renew(accountId: string, id: string, leaseMs: number): Promise<void> {
    const now = this.clock.now();
    const s = this.live(accountId, now);
    const until = now + leaseMs;
    s.running.renew(id, until);
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
    return { balance, totalUsage, keyUsage, budgetHeld: this.budgetHeld(s), runningHeld: s.running.balanceHeld };
  }

  async close(): Promise<void> {
    this.accounts.clear();
  }
}
