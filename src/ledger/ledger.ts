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

export interface Account {
  id: string;
  name: string;
  type: AccountType;
  balance: Nano;
  totalPurchased: Nano;
  totalUsage: Nano;
  createdAt: number;
  freeModelLimitsExempt: boolean;
}

export interface NewAccount {
  name: string;
  type: AccountType;
  createdAt: number;
  freeModelLimitsExempt: boolean;
}

export interface KeyRecord {
  hash: string;
  accountId: string;
  name: string;
  label: string;
  disabled: boolean;
  limit: Nano | null;
  limitReset: LimitReset | null;
  includeByokInLimit: boolean;
  expiresAt: number | null;
  createdAt: number;
}

export interface NewKey {
  hash: string;
  accountId: string;
  name: string;
  label: string;
  limit: Nano | null;
  limitReset: LimitReset | null;
  includeByokInLimit: boolean;
  expiresAt: number | null;
  createdAt: number;
}

export type KeyPatch = Partial<Pick<KeyRecord, 'name' | 'limit' | 'limitReset' | 'includeByokInLimit' | 'disabled'>>;

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

/** Accounts and their credit entries. */
export interface Accounts {
  createAccount(input: NewAccount): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  /** Adds a credit entry and moves the balance (and total_purchased for purchases). */
  addCredits(accountId: string, amount: Nano, kind: CreditKind, at: number): Promise<Account | undefined>;
}

/** API keys and the usage charged to them. */
export interface Keys {
  createKey(key: NewKey): Promise<KeyRecord>;
  findKey(hash: string): Promise<KeyRecord | undefined>;
  listKeys(accountId: string): Promise<KeyRecord[]>;
  updateKey(hash: string, patch: KeyPatch): Promise<KeyRecord | undefined>;
  deleteKey(hash: string): Promise<boolean>;
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
   * Waits for a charge (the promise `charge()` gave) to be durable before its answer is delivered:
   * true once it is. While the ledger is not backlogged the wait is bounded (then false: the charge
   * stays queued and is written exactly once when the database answers); past its backlog bound it
   * waits until the charge is written (backpressure).
   */
  awaitDurable(written: Promise<void>): Promise<boolean>;
  /** Writes every queued charge. (Reads see queued charges without it.) */
  flush(): Promise<void>;
  /** Moves whenever this process changes money or keys: a read made at an unchanged version is current. */
  readonly version: number;
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

export interface LedgerHealth {
  /** A cheap round trip to the database; rejects when it does not answer (readiness, CONTRACT §8). */
  ping(): Promise<void>;
}

/** The whole ledger, as main.ts builds it; every other caller takes only the roles it uses. */
export type Ledger = Accounts & Keys & ByokSecrets & Charges & Generations & Settings & LedgerHealth;
