import type { Awaitable } from '../awaitable.js';
import type { Nano } from './money.js';
import type { LimitReset } from './periods.js';

/**
 * The ledger: accounts, credit entries, API keys, BYOK secrets and generations. The SQL database is
 * the authority for money. Implementations sit beside this file; core code imports only this one, and
 * each caller takes only the roles it uses (Accounts, Keys, Charges, …), not the whole Ledger.
 */
export type AccountType = 'prepaid' | 'enterprise' | 'subscription' | 'invoice';
export const accountTypes: readonly AccountType[] = ['prepaid', 'enterprise', 'subscription', 'invoice'];
export type CreditKind = 'purchase' | 'adjustment';

/** An account as read. Read-only: the caches share one copy with every request (cached-accounts.ts). */
export interface Account {
  readonly id: string;
  readonly name: string;
  readonly type: AccountType;
  readonly balance: Nano;
  readonly totalPurchased: Nano;
  readonly totalUsage: Nano;
  readonly createdAt: number;
  readonly freeModelLimitsExempt: boolean;
}

export interface NewAccount {
  name: string;
  type: AccountType;
  createdAt: number;
  freeModelLimitsExempt: boolean;
}

/**
 * A secret that authenticates as a key: its current one (`validUntil` null) or one replaced by a
 * rotation, until `validUntil` (epoch ms) has passed. Only secrets' hashes are stored.
 */
export interface KeySecret {
  readonly secretHash: string;
  readonly validUntil: number | null;
}

/**
 * An API key. `hash` is its public id (in answers, generations and key usage): the hash of the secret
 * it was created with, and it stays the key's id when a rotation gives it new secrets. Read-only: the
 * caches share one copy with every request (cached-keys.ts).
 */
export interface KeyRecord {
  readonly hash: string;
  readonly accountId: string;
  readonly name: string;
  readonly label: string;
  readonly disabled: boolean;
  readonly limit: Nano | null;
  readonly limitReset: LimitReset | null;
  readonly includeByokInLimit: boolean;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  /** null until the key is first changed. */
  readonly updatedAt: number | null;
  /** A management key provisions its account's keys (CONTRACT §9) and is refused for inference. */
  readonly management: boolean;
  /** The secrets that authenticate as it now, or did until lately (expired ones may linger). */
  readonly secrets: readonly KeySecret[];
}

export interface NewKey {
  /** Public id; also the hash of the key's first secret unless `secretHash` says otherwise. */
  hash: string;
  secretHash?: string;
  accountId: string;
  name: string;
  label: string;
  limit: Nano | null;
  limitReset: LimitReset | null;
  includeByokInLimit: boolean;
  expiresAt: number | null;
  createdAt: number;
  management?: boolean;
}

/** `T` with its fields writable: what is built a field at a time (a patch; a test's stored rows). */
export type Writable<T> = { -readonly [F in keyof T]: T[F] };

/** The fields of a key a change may set. */
export type KeyPatch = Partial<Writable<Pick<KeyRecord, 'name' | 'limit' | 'limitReset' | 'includeByokInLimit' | 'disabled' | 'expiresAt'>>>;

/** A new secret for a key (`rotateKey`); the old ones authenticate until `graceUntil`. */
export interface KeyRotation {
  secretHash: string;
  label: string;
  at: number;
  /** Epoch ms until which the key's earlier secrets still authenticate; `at` (or earlier) ends them at once. */
  graceUntil: number;
}

/** Which of an account's keys `listKeys` answers, oldest first. */
export interface KeyListing {
  /** false: leave disabled keys out (default true). */
  includeDisabled?: boolean;
  /** true: only management keys; false: only inference keys; unset: both. */
  management?: boolean;
  /** One page: `limit` keys after the first `offset`. */
  page?: { offset: number; limit: number };
}

/** Credits charged and BYOK list-price usage of one key, per period. */
export interface UsageTotals {
  usage: Nano;
  byokUsage: Nano;
}
export interface KeyUsage {
  all: UsageTotals;
  daily: UsageTotals;
  weekly: UsageTotals;
  monthly: UsageTotals;
}

/** Where a generation's token counts came from: the upstream's usage, or the gateway's own count. */
export type UsageSource = 'upstream' | 'counted';

export interface Generation {
  id: string;
  accountId: string;
  keyHash: string;
  model: string;
  provider: string;
  tokensPrompt: number;
  tokensCompletion: number;
  /** Credits charged to the balance (for BYOK, the fee). */
  totalCost: Nano;
  /** List-price cost of a BYOK request, paid to the provider with the caller's key; 0 otherwise. */
  byokUsage: Nano;
  isByok: boolean;
  streamed: boolean;
  cancelled: boolean;
  finishReason: string | null;
  /** null for generations recorded before the gateway kept it. */
  usageSource: UsageSource | null;
  createdAt: number;
  latencyMs: number;
}

/** One request's charge: moves the balance, the key's usage and records the generation, atomically. */
export type Charge = Generation;

/** The ledger's view of an account as of its commit sequence number `seq` (moved by every change to its money). */
export interface AccountSnapshot {
  seq: bigint;
  balance: Nano;
  totalUsage: Nano;
}

/** A key's usage in one period (`all`, `d:YYYY-MM-DD`, `w:YYYY-MM-DD`, `m:YYYY-MM`) as of its account's commit `seq`. */
export interface PeriodUsage {
  seq: bigint;
  period: string;
  usage: Nano;
  byokUsage: Nano;
}

/** What one ledger transaction (a group commit, a credit entry) or one consistent read says of an account. */
export interface LedgerUpdate {
  accountId: string;
  account?: AccountSnapshot;
  keys?: ReadonlyArray<{ hash: string; periods: readonly PeriodUsage[] }>;
  /** Generations the transaction recorded. */
  committed?: readonly string[];
  /**
   * When the update is a fresh read of the ledger (moneySnapshot, stamped by its reader) rather than
   * what one of this process's commits wrote: a store that no other process writes to keeps what it
   * read for a bounded time, so that changes made by other processes on the database show.
   */
  readAt?: number;
}

/** Accounts and their credit entries. */
export interface Accounts {
  createAccount(input: NewAccount): Promise<Account>;
  /** The account as committed to the ledger (charges still queued are not in it); at once when a cache has it (awaitable.ts). */
  getAccount(id: string): Awaitable<Account | undefined>;
  /**
   * One consistent read of an account's money and, when asked, a key's usage in `periods` (a period
   * without usage reads as zero), stamped with the account's commit sequence number.
   */
  moneySnapshot(accountId: string, key?: { hash: string; periods: readonly string[] }): Promise<LedgerUpdate | undefined>;
  /** Adds a credit entry and moves the balance (and total_purchased for purchases). */
  addCredits(accountId: string, amount: Nano, kind: CreditKind, at: number): Promise<Account | undefined>;
}

/**
 * API keys and the usage charged to them. A deleted key is gone for every method here (it is not
 * found, listed, changed or authenticated), but its generations and usage stay in the ledger.
 */
export interface Keys {
  createKey(key: NewKey): Promise<KeyRecord>;
  /** A key by its public hash; at once when a cache has it (awaitable.ts). */
  findKey(hash: string): Awaitable<KeyRecord | undefined>;
  /**
   * The public hash of the key a secret (by its hash) belongs to, or undefined for a secret never
   * issued or no longer kept. It never changes once issued: whether the secret still authenticates is
   * in the key's `secrets`. At once when a cache has it (awaitable.ts).
   */
  keyHashOfSecret(secretHash: string): Awaitable<string | undefined>;
  listKeys(accountId: string, listing?: KeyListing): Promise<KeyRecord[]>;
  updateKey(hash: string, patch: KeyPatch, at: number): Promise<KeyRecord | undefined>;
  /** Gives the key a new secret; its public hash, usage and limits stay. Undefined when there is no such key. */
  rotateKey(hash: string, rotation: KeyRotation): Promise<KeyRecord | undefined>;
  /** Soft delete: the key stops authenticating and is gone from lists; its usage and generations stay. */
  deleteKey(hash: string, at: number): Promise<boolean>;
  /** The key's usage as committed to the ledger, per period of `at`. */
  keyUsage(hash: string, at: number): Promise<KeyUsage>;
}

/** The accounts' own provider keys (BYOK), as ciphertext: sealing and opening is the vault's. */
export interface ByokSecrets {
  putByokSecret(accountId: string, provider: string, ciphertext: string, at: number): Promise<void>;
  deleteByokSecret(accountId: string, provider: string): Promise<boolean>;
  byokSecrets(accountId: string): Promise<Map<string, string>>;
}

/** Writing charges: queued, group-committed, durable before an answer is delivered in full. */
export interface Charges {
  /**
   * Queues a charge for the next group commit; resolves once it is durable. A charge whose id is
   * already recorded is not applied again.
   */
  charge(charge: Charge): Promise<void>;
  /**
   * Resolves once the charge with this id is in the ledger's tables (or set aside for good) and the
   * limits store was told (`onCommitted`); at once for one not pending. Durable comes first: a
   * ledger may make a charge durable in a journal and write the tables soon after (charge-journal.ts).
   */
  recorded(id: string): Promise<void>;
  /**
   * Waits for a charge (the promise `charge()` gave) to be durable before its answer is delivered:
   * true once it is. While the ledger is not backlogged the wait is bounded (then false: the charge
   * stays queued and is written exactly once when the database answers); past its backlog bound it
   * waits until the charge is written (backpressure).
   */
  awaitDurable(written: Promise<void>): Promise<boolean>;
  /**
   * Lets every answer held back by the backlog bound go (with false: its charge stays queued), and
   * holds none back from then on; shutdown calls it when its grace is over, so that the requests end
   * and `close()` can write, or log for replay, every charge still queued.
   */
  releaseAnswers(): void;
  /** Writes every queued charge. */
  flush(): Promise<void>;
  /**
   * Writes every queued charge, retrying until the shutdown deadline, and closes. Answers with the
   * charges it could not write, for the caller to log in full so that they can be replayed.
   */
  close(): Promise<Charge[]>;
}

/** Recorded generations (one per charged request). */
export interface Generations {
  getGeneration(id: string): Promise<Generation | undefined>;
}

/** Named values the gateway keeps in the ledger (the generated admin token, the secrets key, …). */
export interface Settings {
  getSetting(name: string): Promise<string | undefined>;
  setSetting(name: string, value: string): Promise<void>;
  /**
   * The setting's value, stored first from `make()` when there is none. Race-free across processes
   * sharing the database: every caller gets the one value stored, and `created` is true only for the
   * caller whose value it is (insert-if-absent, then read back).
   */
  settingOrCreate(name: string, make: () => string): Promise<{ value: string; created: boolean }>;
}

/** A page of accounts, oldest first; `search` matches names, case-insensitively. */
export interface AccountQuery {
  search?: string;
  offset: number;
  limit: number;
}

/** How a generation ended: completed (a finish reason other than "error"), cancelled (the client left), or error. */
export type GenerationStatus = 'completed' | 'cancelled' | 'error';

/** A page of an account's generations, newest first, within [from, to) epoch ms. */
export interface GenerationQuery {
  accountId: string;
  keyHash?: string;
  model?: string;
  status?: GenerationStatus;
  from?: number;
  to?: number;
  offset: number;
  limit: number;
}

/** What spend is grouped by besides time. */
export type SpendDimension = 'account' | 'key' | 'model' | 'provider';

/** Spend within [from, to) epoch ms (whole hours), per hour or UTC day and per the dimensions `by`. */
export interface SpendQuery {
  from: number;
  to: number;
  bucket: 'hour' | 'day';
  by: readonly SpendDimension[];
  accountId?: string;
  keyHash?: string;
}

export interface SpendRow {
  /** Start of the hour or UTC day, epoch ms. */
  start: number;
  /** The row's value of each dimension of the query's `by`. */
  group: Partial<Record<SpendDimension, string>>;
  requests: number;
  cost: Nano;
  byokUsage: Nano;
  promptTokens: number;
  completionTokens: number;
}

/**
 * Reports for operators and account owners, read from rollups the group commit keeps (spend per hour,
 * account, key, model and provider), never from a scan of every generation.
 */
export interface Reports {
  listAccounts(query: AccountQuery): Promise<{ accounts: Account[]; total: number }>;
  listGenerations(query: GenerationQuery): Promise<Generation[]>;
  spend(query: SpendQuery): Promise<SpendRow[]>;
}

export interface LedgerHealth {
  /** A cheap round trip to the database; rejects when it does not answer (readiness, CONTRACT §8). */
  ping(): Promise<void>;
}

/** The whole ledger, as main.ts builds it; every other caller takes only the roles it uses. */
export type Ledger = Accounts & Keys & ByokSecrets & Charges & Generations & Settings & LedgerHealth & Reports;
