// Imported: globalThis's performance is a getter, called on every use (bench/README.md, thirty-fifth session).
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { JournalEntry, type ChargeJournal } from './charge-journal.js';
import type { CommitWriter } from './commit-writer.js';
import { listAccounts, listGenerations, spend } from './report-queries.js';
import { big, bool, flag, num, toAccount, toGeneration } from './rows.js';
import { settledWithin } from '../settled-within.js';
import type {
  Account,
  AccountQuery,
  Charge,
  CreditKind,
  Generation,
  GenerationQuery,
  KeyListing,
  KeyPatch,
  KeyRecord,
  KeyRotation,
  KeySecret,
  KeyUsage,
  Ledger,
  LedgerUpdate,
  NewAccount,
  NewKey,
  SpendQuery,
  SpendRow,
  UsageTotals,
} from './ledger.js';
import type { Nano } from './money.js';
import { asLedgerError, isLedgerUnavailable, LedgerTimeout } from './ledger-unavailable.js';
import { unwritableValue } from './unwritable-value.js';
import { periodKeys, type LimitReset } from './periods.js';
import { postgresCommitWriter } from './postgres-commit-writer.js';
import { journalTableRows } from './journal-table-rows.js';
import { FileChargeJournal, journalDirOf, MemoryChargeJournal } from './file-charge-journal.js';
import { sqliteHandleOf } from './database.js';
import { sqliteCommitWriter } from './sqlite-commit-writer.js';
import type { ApiKeysTable, Database } from './schema.js';
import { writeCommit } from './write-commit.js';
import { systemClock, type Clock } from '../clock.js';
import { IdMap } from '../id-map.js';

/** The tables are this many journaled charges behind (they refuse writes): no more are taken for now. */
class LedgerBacklog extends Error {
  override readonly name = 'LedgerBacklog';
  constructor(behind: number) {
    super(`the ledger's tables are ${behind} journaled charges behind; charges wait until they catch up`);
  }
}

function toKey(row: ApiKeysTable, secrets: readonly KeySecret[]): KeyRecord {
  return {
    hash: row.hash,
    accountId: row.account_id,
    name: row.name,
    label: row.label,
    disabled: bool(row.disabled),
    limit: row.limit_amount === null ? null : big(row.limit_amount),
    limitReset: (row.limit_reset as LimitReset | null) ?? null,
    includeByokInLimit: bool(row.include_byok_in_limit),
    expiresAt: row.expires_at === null ? null : num(row.expires_at),
    createdAt: num(row.created_at),
    updatedAt: row.updated_at === null ? null : num(row.updated_at),
    management: bool(row.management),
    secrets,
  };
}

const toSecret = (row: { secret_hash: string; valid_until: unknown }): KeySecret => ({
  secretHash: row.secret_hash,
  validUntil: row.valid_until === null ? null : num(row.valid_until),
});

/**
 * How long a read waits for the database before it is answered ledger_unavailable (CONTRACT §8: no
 * request waits on it past 5 s). Above database.ts's statement timeout, so that a slow statement is
 * cancelled by the server first; this bound is for a server that does not answer at all.
 */
const READ_DEADLINE_MS = 3000;

interface Queued {
  charge: Charge;
  /** The charge would survive a crash: its answer may go. */
  durable: () => void;
  /** The charge is in the tables (or set aside for good), and `onCommitted` was told. */
  recorded: () => void;
  attempts: number;
  /** The journal entry that holds it, once journaled (SQLite; on PostgreSQL the fallback journal). */
  entry?: JournalEntry;
}

const NOTHING = (): void => undefined;

/**
 * Lets the charge's answer go, once. On SQLite a charge is made durable twice (its journal line,
 * then the tables), and a promise resolved again is no error but costs V8 a runtime call into Node's
 * promise hook (~2,300 instructions a request, instructions.mjs, twenty-sixth session).
 */
function madeDurable(q: Queued): void {
  q.durable();
  q.durable = NOTHING;
}

/** The journal entries that hold a batch's charges, with the charges of the batch each holds. */
function entriesOf(batch: readonly Queued[]): Map<JournalEntry, Charge[]> {
  const byEntry = new Map<JournalEntry, Charge[]>();
  for (const q of batch) {
    if (!q.entry) continue;
    const list = byEntry.get(q.entry);
    if (list) list.push(q.charge);
    else byEntry.set(q.entry, [q.charge]);
  }
  return byEntry;
}

/** Tries of a charge that the database refuses while it accepts others, before it is set aside. */
const MAX_ATTEMPTS = 5;
/** Charges written in one transaction at most; the rest wait for the next one. */
const MAX_BATCH = 2000;
/**
 * Journaled charges (SQLite) are applied to the tables once APPLY_BATCH of them wait, or APPLY_MS after
 * the first of them: one transaction of up to APPLY_BATCH charges (~1 ms of the event loop), instead
 * of a transaction a group commit. 128 rather than 64: 1.7 % less CPU a request side by side, the
 * promotion to V8's old generation the same (bench/README.md, nineteenth session); 256 no better.
 */
export const APPLY_BATCH = 128;
const APPLY_MS = 50;
/** How long `close()` waits for the database connections to close once the writing is over. */
const DESTROY_WAIT_MS = 2000;

export interface KyselyLedgerOptions {
  /**
   * Called when a group commit's transaction fails: the charges stay queued and are retried (or, when
   * only some of them tripped it, written one by one at once).
   */
  onFlushError?: (err: unknown) => void;
  /**
   * Told of what went wrong with the charge journal's files apart from a commit (SQLite): a line or a
   * file a start could not read (kept), a file that could not be deleted (applied again, each charge
   * once, and deleted by a later start), a set-aside line that could not be written.
   */
  onJournalProblem?: (err: unknown) => void;
  /**
   * Told what each committed transaction that changed money says of its accounts (group commits and
   * credit entries), after COMMIT: the limits store keeps the newest view (see LedgerUpdate).
   */
  onCommitted?: (updates: LedgerUpdate[]) => void;
  /**
   * Told the generation ids of each group commit once it is durable (with a journal, before they
   * reach the tables and `onCommitted`): how the ledger gathers charges shows here.
   */
  onGroupCommit?: (ids: string[]) => void;
  /** How long a read waits for the database before it is answered ledger_unavailable (READ_DEADLINE_MS). */
  readDeadlineMs?: number;
  /** Called when the database refused a single charge that others in its batch did not trip on. */
  onChargeRejected?: (err: unknown, charge: Charge) => void;
  retryDelayMs?: number;
  /** How long `awaitDurable` waits while the ledger is not backlogged (config `ledger.durable_wait_ms`). */
  durableWaitMs?: number;
  /** What times `awaitDurable`'s wait (default: the system's timers). */
  timers?: Pick<Clock, 'schedule'>;
  /** Charges waiting to be written past which `awaitDurable` waits without bound (`ledger.max_queued_charges`). */
  maxQueuedCharges?: number;
  /** How long `close()` keeps trying to write queued charges (`ledger.shutdown_deadline_ms`). */
  shutdownDeadlineMs?: number;
  /**
   * While commits carry several charges, a group commit starts at most this often (ms), so that the
   * charges of this long go in one. Default: 0 on SQLite (a commit costs microseconds; the charges of
   * the event-loop turns in which requests keep ending go together: `gather`), COMMIT_INTERVAL_MS on
   * PostgreSQL (see there).
   */
  commitIntervalMs?: number;
  /** How long journaled charges (SQLite) wait for APPLY_BATCH of them before they are applied anyway (default APPLY_MS). */
  applyDelayMs?: number;
  /** Where a SQLite ledger journals its charges (default: files beside the database, journalOf). */
  journal?: ChargeJournal;
  /**
   * PostgreSQL: where charges the database has not taken when an answer's bounded wait is over
   * (`durableWaitMs`) are made durable before the answer goes (config `ledger.journal_dir`), so that a
   * process killed before the database answers again loses none: the next start applies them, each
   * once. Without it such charges wait in memory only.
   */
  fallbackJournal?: ChargeJournal;
}

/**
 * A SQLite ledger's charge journal: files in `<database>-charges/` beside a database on disk; for one
 * in memory, nothing outlives the process, so nothing is written.
 */
export function journalOf(db: Kysely<Database>): ChargeJournal {
  const name = sqliteHandleOf(db)?.name;
  if (name === undefined) throw new Error('a SQLite ledger needs a database opened by openDatabase (its group commits run on its handle)');
  return name === ':memory:' || name === '' ? new MemoryChargeJournal() : new FileChargeJournal(journalDirOf(name));
}

/**
 * On PostgreSQL a commit is one round trip (postgres-commit-writer.ts), which costs this process tens of
 * microseconds of CPU whatever it carries and takes about a millisecond: under load, commits started as
 * soon as the last one ends would each carry the few charges that ended meanwhile. While commits carry
 * several charges (requests end concurrently), one starts at most every COMMIT_INTERVAL_MS, so each
 * carries more, for an added wait of at most that much (an answer waits for a commit anyway). A lone
 * client's charges (one a commit) are never held back.
 */
const COMMIT_INTERVAL_MS = 5;

/**
 * How long until leftover segments final at `finalAt` are read again: a second past it, and at most an
 * hour at a time (a segment named in the far future, by a process whose clock was wrong, is read again
 * hourly, not at once: a longer delay than a timer holds would fire at once).
 */
export function leftoverDelay(finalAt: number, now: number): number {
  return Math.min(Math.max(0, finalAt - now) + 1000, 3_600_000);
}

/** See KyselyLedger.gather. */
const GATHER_TURNS = 4;
const GATHER_MS = 2;

/**
 * The ledger on Kysely (SQLite through better-sqlite3, or PostgreSQL). Charges are group-committed:
 * the charges queued while one commit is written go together in the next one (each dialect's
 * CommitWriter says how, with SQL written once: one transaction of prepared single-row statements on
 * SQLite, one statement on PostgreSQL), rows locked in a fixed order (accounts by id, then key usage
 * by key and period) so that two processes sharing a database never deadlock. Admin work and reads use
 * the query builder; only the commit is hot.
 * Answers wait for their charge to be durable before they are sent (`awaitDurable`), so a crash
 * loses no charge of an answer delivered in full: on SQLite every commit goes through the journal
 * first; on PostgreSQL a charge it did not take within the bounded wait goes to the fallback journal
 * before its answer. Charges queued while the database fails are written when it answers again, or
 * (those no journal holds) logged by the caller of `close()`.
 */
export class KyselyLedger implements Ledger {
  private queue: Queued[] = [];
  /** Charges queued or being written, by generation id. */
  private readonly pendingCharges = new IdMap<{ queued: Queued; written: Promise<void>; recorded: Promise<void>; journaled: boolean }>();
  /** Charges journaled (durable) and not yet in the tables, oldest first (SQLite). */
  private unapplied: Queued[] = [];
  /** The rows of the journal table (earlier versions') this ledger applies, by sequence number, until they are dropped. */
  private readonly rows = new Map<number, JournalEntry>();
  private applying: Promise<void> | undefined;
  private applyTimer: NodeJS.Timeout | undefined;
  /** The timer set runs the application at once (a batch waits), not after the wait for one. */
  private applyNow = false;
  /** The last application failed: the next waits for its retry timer (reads do not hurry it). */
  private applyRetrying = false;
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  /** When the last group commit started (performance.now()), and how many charges it carried. */
  private lastCommit = { at: -Infinity, charges: 0 };
  private readonly commitIntervalMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Reads again, once final, the segments a start applied while a running process might still write them. */
  private leftoverTimer: NodeJS.Timeout | undefined;
  private closing = false;
  /** close() has answered the charges it could not write: no charge is queued any more. */
  private closed = false;
  /** Answers held back past the backlog bound (awaitDurable), each waiting for its own charge's write. */
  private readonly heldBack = new Set<(durable: boolean) => void>();
  /** Set by releaseAnswers (shutdown past its grace): no answer is held back any more. */
  private answersReleased = false;
  /** How this database's dialect writes a group commit. */
  private readonly writer: CommitWriter;
  /**
   * Where charges are made durable before they are in the tables, if anywhere: every group commit's on
   * SQLite (journalFirst), only those the database did not take in time on PostgreSQL (the fallback).
   */
  private readonly journal: ChargeJournal | undefined;
  /** Every group commit goes to the journal first (SQLite); else the journal is the fallback (PostgreSQL). */
  private readonly journalFirst: boolean;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: KyselyLedgerOptions = {},
  ) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    this.writer = postgres ? postgresCommitWriter : sqliteCommitWriter;
    this.journal = postgres ? options.fallbackJournal : (options.journal ?? journalOf(db));
    this.journalFirst = !postgres;
    this.commitIntervalMs = options.commitIntervalMs ?? (postgres ? COMMIT_INTERVAL_MS : 0);
  }

  /**
   * A read that a request needs (to be admitted, or to answer): bounded by `readDeadlineMs`, and
   * ledger_unavailable when the database does not answer (ledger-unavailable.ts decides), so that a
   * client gets a 503 with Retry-After, never a 500 or a wait without end. An abandoned read finishes
   * (or fails) on its connection by itself: it changes nothing.
   */
  private async read<T>(op: () => Promise<T>): Promise<T> {
    const ms = this.options.readDeadlineMs ?? READ_DEADLINE_MS;
    // The journaled charges first (applied()), within the same deadline.
    const running = this.applied().then(op);
    running.catch(() => undefined); // answered below, or abandoned past the deadline
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LedgerTimeout(ms)), ms);
    });
    try {
      return await Promise.race([running, deadline]);
    } catch (err) {
      throw asLedgerError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * An admin write: ledger_unavailable when the database does not answer. It has no deadline of its
   * own (the statement timeout bounds it): a write given up while it runs could still land.
   */
  private async write<T>(op: () => Promise<T>): Promise<T> {
    await this.applied();
    try {
      return await op();
    } catch (err) {
      throw asLedgerError(err);
    }
  }

  async createAccount(input: NewAccount): Promise<Account> {
    const id = `acct_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    await this.write(() =>
      this.db
        .insertInto('accounts')
        .values({
          id,
          name: input.name,
          type: input.type,
          balance: 0,
          total_purchased: 0,
          total_usage: 0,
          created_at: input.createdAt,
          free_model_limits_exempt: flag(input.freeModelLimitsExempt),
        })
        .execute(),
    );
    return (await this.getAccount(id)) as Account;
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.read(() => this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst());
    return row ? toAccount(row) : undefined;
  }

  async moneySnapshot(accountId: string, key?: { hash: string; periods: readonly string[] }): Promise<LedgerUpdate | undefined> {
    // One statement, so one snapshot: the account's row and the key's rows as of the same commit.
    const query = this.db.selectFrom('accounts').select(['accounts.seq', 'accounts.balance', 'accounts.total_usage']).where('accounts.id', '=', accountId);
    const periods = key?.periods ?? [];
    const rows = await this.read(() =>
      (key
        ? query
            .leftJoin('key_usage', (join) => join.on('key_usage.key_hash', '=', key.hash).on('key_usage.period', 'in', [...periods]))
            .select(['key_usage.period', 'key_usage.usage', 'key_usage.byok_usage'])
        : query.select((eb) => [eb.val(null).as('period'), eb.val(null).as('usage'), eb.val(null).as('byok_usage')])
      ).execute(),
    );
    const first = rows[0];
    if (!first) return undefined;
    const seq = big(first.seq);
    const update: LedgerUpdate = { accountId, account: { seq, balance: big(first.balance), totalUsage: big(first.total_usage) } };
    if (key) {
      const found = new Map(rows.filter((r) => r.period !== null).map((r) => [r.period as string, r]));
      update.keys = [
        {
          hash: key.hash,
          periods: periods.map((period) => {
            const r = found.get(period);
            return { seq, period, usage: r ? big(r.usage) : 0n, byokUsage: r ? big(r.byok_usage) : 0n };
          }),
        },
      ];
    }
    return update;
  }

  async addCredits(accountId: string, amount: Nano, kind: CreditKind, at: number): Promise<Account | undefined> {
    const row = await this.write(() =>
      this.db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('accounts')
          .set((eb) => ({
            balance: eb('balance', '+', amount),
            total_purchased: kind === 'purchase' ? eb('total_purchased', '+', amount) : eb.ref('total_purchased'),
            seq: eb('seq', '+', 1),
          }))
          .where('id', '=', accountId)
          .returningAll()
          .executeTakeFirst();
        if (!updated) return undefined;
        await trx
          .insertInto('credit_entries')
          .values({ id: `cred_${randomUUID()}`, account_id: accountId, kind, amount, created_at: at })
          .execute();
        return updated;
      }),
    );
    if (!row) return undefined;
    this.options.onCommitted?.([{ accountId, account: { seq: big(row.seq), balance: big(row.balance), totalUsage: big(row.total_usage) } }]);
    return toAccount(row);
  }

  async createKey(key: NewKey): Promise<KeyRecord> {
    await this.write(() =>
      this.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('api_keys')
          .values({
            hash: key.hash,
            account_id: key.accountId,
            name: key.name,
            label: key.label,
            disabled: 0,
            limit_amount: key.limit,
            limit_reset: key.limitReset,
            include_byok_in_limit: flag(key.includeByokInLimit),
            expires_at: key.expiresAt,
            created_at: key.createdAt,
            updated_at: null,
            deleted_at: null,
            management: flag(key.management ?? false),
          })
          .execute();
        await trx
          .insertInto('key_secrets')
          .values({ secret_hash: key.secretHash ?? key.hash, key_hash: key.hash, valid_until: null, created_at: key.createdAt })
          .execute();
      }),
    );
    return (await this.findKey(key.hash)) as KeyRecord;
  }

  /** Reads the key from the database every time: caching is CachedKeys's, which the change feed keeps fresh. */
  async findKey(hash: string): Promise<KeyRecord | undefined> {
    // One statement: the key and its secrets as of one moment.
    const rows = await this.read(() =>
      this.db
        .selectFrom('api_keys')
        .leftJoin('key_secrets', 'key_secrets.key_hash', 'api_keys.hash')
        .selectAll('api_keys')
        .select(['key_secrets.secret_hash', 'key_secrets.valid_until'])
        .where('api_keys.hash', '=', hash)
        .where('api_keys.deleted_at', 'is', null)
        .orderBy('key_secrets.created_at')
        .execute(),
    );
    const first = rows[0];
    if (!first) return undefined;
    const secrets = rows.flatMap((r) => (r.secret_hash === null ? [] : [toSecret({ secret_hash: r.secret_hash, valid_until: r.valid_until })]));
    return toKey(first, secrets);
  }

  async keyHashOfSecret(secretHash: string): Promise<string | undefined> {
    const row = await this.read(() => this.db.selectFrom('key_secrets').select('key_hash').where('secret_hash', '=', secretHash).executeTakeFirst());
    return row?.key_hash;
  }

  async listKeys(accountId: string, listing: KeyListing = {}): Promise<KeyRecord[]> {
    let query = this.db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null);
    if (listing.includeDisabled === false) query = query.where('disabled', '=', 0);
    if (listing.management !== undefined) query = query.where('management', '=', flag(listing.management));
    query = query.orderBy('created_at').orderBy('hash');
    if (listing.page) query = query.limit(listing.page.limit).offset(listing.page.offset);
    const rows = await this.read(() => query.execute());
    if (rows.length === 0) return [];
    const secrets = await this.read(() =>
      this.db
        .selectFrom('key_secrets')
        .select(['key_hash', 'secret_hash', 'valid_until'])
        .where(
          'key_hash',
          'in',
          rows.map((r) => r.hash),
        )
        .orderBy('created_at')
        .execute(),
    );
    return rows.map((r) => toKey(r, secrets.filter((x) => x.key_hash === r.hash).map(toSecret)));
  }

  async updateKey(hash: string, patch: KeyPatch, at: number): Promise<KeyRecord | undefined> {
    const set: Partial<ApiKeysTable> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.limit !== undefined) set.limit_amount = patch.limit;
    if (patch.limitReset !== undefined) set.limit_reset = patch.limitReset;
    if (patch.includeByokInLimit !== undefined) set.include_byok_in_limit = flag(patch.includeByokInLimit);
    if (patch.disabled !== undefined) set.disabled = flag(patch.disabled);
    if (patch.expiresAt !== undefined) set.expires_at = patch.expiresAt;
    if (Object.keys(set).length > 0) {
      set.updated_at = at;
      await this.write(() => this.db.updateTable('api_keys').set(set).where('hash', '=', hash).where('deleted_at', 'is', null).execute());
    }
    return this.findKey(hash);
  }

  async rotateKey(hash: string, rotation: KeyRotation): Promise<KeyRecord | undefined> {
    const rotated = await this.write(() =>
      this.db.transaction().execute(async (trx) => {
        const key = await trx
          .updateTable('api_keys')
          .set({ label: rotation.label, updated_at: rotation.at })
          .where('hash', '=', hash)
          .where('deleted_at', 'is', null)
          .returning('hash')
          .executeTakeFirst();
        if (!key) return false;
        // Every earlier secret stops at graceUntil at the latest (one due to stop sooner keeps its end);
        // those whose time is over go.
        const earlier = trx.deleteFrom('key_secrets').where('key_hash', '=', hash);
        if (rotation.graceUntil <= rotation.at) await earlier.execute();
        else {
          await earlier.where('valid_until', '<=', rotation.at).execute();
          await trx
            .updateTable('key_secrets')
            .set({ valid_until: rotation.graceUntil })
            .where('key_hash', '=', hash)
            .where((eb) => eb.or([eb('valid_until', 'is', null), eb('valid_until', '>', rotation.graceUntil)]))
            .execute();
        }
        await trx.insertInto('key_secrets').values({ secret_hash: rotation.secretHash, key_hash: hash, valid_until: null, created_at: rotation.at }).execute();
        return true;
      }),
    );
    return rotated ? this.findKey(hash) : undefined;
  }

  async deleteKey(hash: string, at: number): Promise<boolean> {
    // The key row and its usage stay (generations and reports name it); its secrets go.
    return this.write(() =>
      this.db.transaction().execute(async (trx) => {
        const res = await trx
          .updateTable('api_keys')
          .set({ deleted_at: at, updated_at: at })
          .where('hash', '=', hash)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (big(res.numUpdatedRows) === 0n) return false;
        await trx.deleteFrom('key_secrets').where('key_hash', '=', hash).execute();
        return true;
      }),
    );
  }

  async keyUsage(hash: string, at: number): Promise<KeyUsage> {
    const p = periodKeys(at);
    const rows = await this.read(() =>
      this.db
        .selectFrom('key_usage')
        .select(['period', 'usage', 'byok_usage'])
        .where('key_hash', '=', hash)
        .where('period', 'in', [p.all, p.daily, p.weekly, p.monthly])
        .execute(),
    );
    const get = (period: string): UsageTotals => {
      const row = rows.find((r) => r.period === period);
      return row ? { usage: big(row.usage), byokUsage: big(row.byok_usage) } : { usage: 0n, byokUsage: 0n };
    };
    return { all: get(p.all), daily: get(p.daily), weekly: get(p.weekly), monthly: get(p.monthly) };
  }

  async putByokSecret(accountId: string, provider: string, ciphertext: string, at: number): Promise<void> {
    await this.write(() =>
      this.db
        .insertInto('byok_secrets')
        .values({ account_id: accountId, provider, ciphertext, created_at: at })
        .onConflict((oc) => oc.columns(['account_id', 'provider']).doUpdateSet({ ciphertext, created_at: at }))
        .execute(),
    );
  }

  async deleteByokSecret(accountId: string, provider: string): Promise<boolean> {
    const res = await this.write(() =>
      this.db.deleteFrom('byok_secrets').where('account_id', '=', accountId).where('provider', '=', provider).executeTakeFirst(),
    );
    return big(res.numDeletedRows) > 0n;
  }

  async byokSecrets(accountId: string): Promise<Map<string, string>> {
    const rows = await this.read(() => this.db.selectFrom('byok_secrets').select(['provider', 'ciphertext']).where('account_id', '=', accountId).execute());
    return new Map(rows.map((r) => [r.provider, r.ciphertext]));
  }

  charge(charge: Charge): Promise<void> {
    // A generation is charged once: while one with this id waits to be written, a second is the same.
    const already = this.pendingCharges.get(charge.id);
    if (already) return already.written;
    // Past close() no charge can be written: it is handed over to be logged in full, for replay.
    if (this.closed) {
      this.options.onChargeRejected?.(new Error('the ledger is closed'), charge);
      return Promise.resolve();
    }
    const { queued, written } = this.pend(charge);
    this.queue.push(queued);
    this.schedule();
    return written;
  }

  /** Tracks a charge until it is in the tables: queued for a group commit, or journaled already (in `entry`). */
  private pend(charge: Charge, entry?: JournalEntry): { queued: Queued; written: Promise<void> } {
    let durable: () => void = () => undefined;
    let recorded: () => void = () => undefined;
    const journaled = entry !== undefined;
    const written = journaled ? Promise.resolve() : new Promise<void>((resolve) => (durable = resolve));
    const recordedPromise = new Promise<void>((resolve) => (recorded = resolve));
    const queued: Queued = { charge, durable, recorded, attempts: 0, entry };
    this.pendingCharges.set(charge.id, { queued, written, recorded: recordedPromise, journaled });
    return { queued, written };
  }

  recorded(id: string): Promise<void> {
    return this.pendingCharges.get(id)?.recorded ?? Promise.resolve();
  }

  /**
   * Starts a group commit on the next turn (or, when the last one carried several charges, once
   * `commitIntervalMs` has passed since it started), unless one is due already or the database is
   * being retried.
   */
  private schedule(): void {
    if (this.scheduled || this.retryTimer || this.closing) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.flushQueued(true).catch(() => undefined);
    };
    const wait = this.lastCommit.charges > 1 ? this.lastCommit.at + this.commitIntervalMs - performance.now() : 0;
    if (wait > 0) setTimeout(run, wait);
    else this.gather(run, this.queue.length, performance.now(), 0);
  }

  /**
   * Runs `run` at the end of this event-loop turn, or, while each turn brings more charges (requests
   * ending together), a turn later, up to GATHER_TURNS turns and GATHER_MS: a commit's fixed cost
   * (its transaction, the pages it writes) is shared by more charges, for a wait of a few turns. A
   * lone request's charge (nothing else arrives in its turn) is written at the end of its turn.
   */
  private gather(run: () => void, seen: number, since: number, turns: number): void {
    setImmediate(() => {
      const arrived = this.queue.length > seen;
      if (arrived && turns + 1 < GATHER_TURNS && performance.now() - since < GATHER_MS) this.gather(run, this.queue.length, since, turns + 1);
      else run();
    });
  }

  /**
   * Waits until the charge `written` (from `charge()`) is durable, so that its answer can be sent.
   * While fewer than `maxQueuedCharges` charges wait to be written, it waits at most `durableWaitMs`
   * and then lets the answer go (the charge stays queued, and is written exactly once when the
   * database answers, or logged at shutdown). Past that bound, it waits until the charge is written:
   * answers slow to the pace the database keeps rather than piling up unwritten charges.
   *
   * One promise and one reaction to `written` a request, not a race of promises (every answer waits
   * here: a race, its reactions and an async function cost six promises a request).
   */
  awaitDurable(written: Promise<void>): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      // Past the bound the answer waits for the write after all (held back until releaseAnswers). The
      // write settling after the wait was over changes nothing: a promise settles once.
      const timer = (this.options.timers ?? systemClock).schedule(this.options.durableWaitMs ?? 5000, () => {
        if (!this.answersReleased && this.pendingCharges.size >= (this.options.maxQueuedCharges ?? 10_000)) this.heldBack.add(resolve);
        // PostgreSQL did not take it in time: durable in the fallback journal, `written` resolves (true).
        else if (!this.journalPending()) resolve(false);
      });
      written.then(
        () => {
          timer.cancel();
          if (this.heldBack.size > 0) this.heldBack.delete(resolve);
          resolve(true);
        },
        (err: unknown) => {
          timer.cancel();
          if (this.heldBack.size > 0) this.heldBack.delete(resolve);
          reject(err);
        },
      );
    });
  }

  /**
   * PostgreSQL: appends every charge that is only in memory (queued, or in a commit the database has
   * not answered) to the fallback journal, in one append, and makes them durable. They are still
   * written to the tables as they were to be; the commit that takes one drops it from the journal, and
   * a start applies what a stopped process left there (recoverJournal). Answers whether they are
   * durable now: false without a fallback journal, or when its append failed (then they stay in memory).
   */
  private journalPending(): boolean {
    if (!this.journal || this.journalFirst) return false;
    const pending = [...this.pendingCharges.values()].filter((p) => !p.journaled);
    if (pending.length === 0) return true;
    const charges = pending.map((p) => p.queued.charge);
    let entry: JournalEntry;
    try {
      entry = new JournalEntry(charges, this.journal.append(charges));
    } catch (err) {
      this.options.onJournalProblem?.(err);
      return false;
    }
    for (const p of pending) {
      p.journaled = true;
      p.queued.entry = entry;
      madeDurable(p.queued);
    }
    return true;
  }

  releaseAnswers(): void {
    this.answersReleased = true;
    // PostgreSQL: their charges are made durable first (the fallback journal); each answer then goes
    // as its `written` resolves. Else they go with their charges in memory.
    if (this.journalPending()) return;
    for (const release of this.heldBack) release(false);
    this.heldBack.clear();
  }

  async flush(): Promise<void> {
    // The journaled charges first (they make room below the backlog bound), then the queue, then those.
    if (this.unapplied.length > 0) await this.applyJournaled().catch(() => undefined);
    await this.flushQueued(false);
    await this.applyJournaled();
  }

  /**
   * One group commit at a time; a caller arriving mid-commit waits for it and then writes its own. A
   * commit the ledger scheduled itself (`scheduled`) stands down when the one it waited for failed: the
   * database is being retried (scheduleRetry), and writing again at once could write part of a batch
   * while the database comes back.
   */
  private async flushQueued(scheduled: boolean): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (this.queue.length === 0 || (scheduled && this.retryTimer)) return;
    const batch = this.queue.splice(0, MAX_BATCH);
    this.lastCommit = { at: performance.now(), charges: batch.length };
    this.flushing = this.writeBatch(batch).then(
      (failed) => {
        this.flushing = undefined;
        if (failed.length > 0) {
          this.queue = failed.concat(this.queue);
          this.scheduleRetry();
        } else if (this.queue.length > 0) this.schedule(); // what queued meanwhile goes in the next commit
      },
      (err: unknown) => {
        this.flushing = undefined;
        this.queue = batch.concat(this.queue);
        this.options.onFlushError?.(err);
        this.scheduleRetry();
        throw err;
      },
    );
    return this.flushing;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closing) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flush().catch(() => undefined);
    }, this.options.retryDelayMs ?? 1000);
    this.retryTimer.unref();
  }

  /**
   * One group commit: with a journal (SQLite), the batch is appended to it and its charges are
   * durable (their answers may go), to be applied to the tables in bulk soon after; without one
   * (PostgreSQL, where a commit is one statement), written to the tables at once (writeToTables).
   */
  private async writeBatch(batch: Queued[]): Promise<Queued[]> {
    if (this.journal && this.journalFirst) {
      // Past the backlog bound of charges the tables have not taken (they refuse writes while the
      // journal takes them), no more are made durable: their answers wait (awaitDurable), as they
      // would for a database refusing every write, rather than piling up in memory.
      const room = (this.options.maxQueuedCharges ?? 10_000) - this.unapplied.length;
      if (room <= 0) throw new LedgerBacklog(this.unapplied.length);
      // What does not fit waits in the queue for the next try (flushQueued retries it). The caller's
      // batch is left whole: an append that throws has it queued again, all of it.
      const taken = batch.length > room ? batch.slice(0, room) : batch;
      const over = batch.length > room ? batch.slice(room) : [];
      // Durable in one append; into the tables in bulk soon after (applyJournaled).
      const charges = taken.map((q) => q.charge);
      let appended: JournalEntry['segment'];
      try {
        appended = this.journal.append(charges);
      } catch (err) {
        // The journal cannot be written (its disk or folder is failing) but the database may be: the
        // batch goes to the tables at once, durable there, as on a ledger without a journal. (Kept in
        // memory until the journal takes it again, its answers would go after durable_wait_ms with
        // their charges in memory only: a kill then lost them.) A database failing too keeps it queued.
        this.options.onJournalProblem?.(err);
        return this.writeToTables(batch, (ids) => this.options.onGroupCommit?.(ids));
      }
      const entry = new JournalEntry(charges, appended);
      this.tell(() => this.options.onGroupCommit?.(charges.map((c) => c.id)));
      for (const q of taken) {
        const pending = this.pendingCharges.get(q.charge.id);
        if (pending?.queued === q) pending.journaled = true;
        q.entry = entry;
        madeDurable(q);
        this.unapplied.push(q);
      }
      this.scheduleApply();
      return over;
    }
    return this.writeToTables(batch, (ids) => this.options.onGroupCommit?.(ids));
  }

  /**
   * Writes a batch to the tables in one transaction and marks its charges recorded (and durable).
   * When the transaction fails, the charges are tried one by one, so that one charge the database
   * refuses cannot hold back the others. A failed charge counts a try when others in its batch were
   * written (unless the database did not answer it), or, when none was, when one of its own values
   * is one the ledger cannot write (unwritableValue); after its last try it is set aside (out of the
   * journal too) and reported. Any other failed charge is kept and retried without counting a try;
   * when that is every charge of the batch, the database is failing and the batch is kept whole (it
   * throws). `onWritten` is told the ids of each transaction that went through, before their charges'
   * promises resolve.
   */
  private async writeToTables(batch: Queued[], onWritten?: (ids: string[]) => void): Promise<Queued[]> {
    const done = (q: Queued) => {
      madeDurable(q);
      q.recorded();
    };
    const committed = (qs: Queued[]) => {
      onWritten?.(qs.map((q) => q.charge.id));
      qs.forEach(done);
    };
    let batchError: unknown;
    try {
      await this.writeTransaction(batch);
      committed(batch);
      return [];
    } catch (err) {
      // The database does not answer: trying the charges one by one would only wait longer. Keep them all.
      if (isLedgerUnavailable(err)) throw err;
      batchError = err;
    }
    const failed: Queued[] = [];
    const errors: unknown[] = [];
    // A lone charge was tried alone already.
    if (batch.length === 1) {
      failed.push(...batch);
      errors.push(batchError);
    } else
      for (const q of batch) {
        try {
          await this.writeTransaction([q]);
          committed([q]);
        } catch (err) {
          errors.push(err);
          failed.push(q);
        }
      }
    // Which tries count. When others were written, the database takes writes: each refused charge's,
    // unless the database did not answer it. When none was (a lone charge, or a batch all refused), the
    // database may refuse every charge for now (a rule, a full disk): only a charge that can never be
    // written, whatever the database, counts its tries.
    const partly = failed.length < batch.length;
    const unwritable = failed.map((q) => unwritableValue(q.charge));
    const refused = failed.map((_, i) => (partly ? !isLedgerUnavailable(errors[i]) : unwritable[i] !== undefined));
    // Nothing could be written and nothing says why but the database: it is failing. Keep them all.
    if (!partly && !refused.includes(true)) throw errors.at(-1);
    // Some went through one by one, or a charge can never be written: say so.
    this.options.onFlushError?.(batchError);
    const retry: Queued[] = [];
    const setAside = new Map<JournalEntry, boolean>(); // and whether setting its charges aside completed it
    const setAsideIds: string[] = [];
    for (const [i, q] of failed.entries()) {
      if (refused[i]) q.attempts += 1;
      if (q.attempts < MAX_ATTEMPTS) retry.push(q);
      else {
        // Its own error, and what in it the ledger cannot write when that is known.
        const why = unwritable[i];
        const err = why === undefined ? errors[i] : new Error(`generation ${q.charge.id}: ${why}`, { cause: errors[i] });
        this.tell(() => this.options.onChargeRejected?.(err, q.charge));
        this.unpend(q.charge);
        if (q.entry) {
          const completed = q.entry.done([q.charge]);
          setAside.set(q.entry, completed || (setAside.get(q.entry) ?? false));
          if (q.entry.segment) setAsideIds.push(q.charge.id);
        }
        done(q); // nothing more will be written for it; its holds may go
      }
    }
    // Logged in full for replay by onChargeRejected: not to be applied again at the next start (a line
    // of the journal says so). Its entry keeps what still waits for the tables, or goes when nothing does.
    if (setAsideIds.length > 0) this.journalStep((j) => j.setAside(setAsideIds));
    for (const [e, completed] of setAside) {
      const segment = e.segment;
      if (segment) {
        if (completed) this.journalStep((j) => j.completed(segment));
      } else if (e.row !== undefined) {
        if (completed) this.rows.delete(e.row);
        await journalTableRows.discard(this.db, e.row, e.remaining()).catch((err: unknown) => this.options.onFlushError?.(err));
      }
    }
    return retry;
  }

  /**
   * Applies the journaled charges soon: at once when a batch of them waits, else within APPLY_MS. A
   * batch that fills while the wait for one runs goes at once too: charges waiting the whole APPLY_MS
   * under load (as they did) kept each request's pending state alive across the young generation's
   * collections, which promoted it to the old one (bench/README.md, sixteenth session). A retry's
   * timer (the database failed) is never cut short.
   */
  private scheduleApply(retryDelayMs?: number): void {
    if (retryDelayMs !== undefined) this.applyRetrying = true;
    if (this.closing) return;
    const batchWaits = retryDelayMs === undefined && this.unapplied.length >= APPLY_BATCH;
    if (this.applyTimer) {
      if (!batchWaits || this.applyNow || this.applyRetrying) return;
      clearTimeout(this.applyTimer);
    }
    const ms = retryDelayMs ?? (batchWaits ? 0 : (this.options.applyDelayMs ?? APPLY_MS));
    this.applyNow = ms === 0;
    this.applyTimer = setTimeout(() => {
      this.applyTimer = undefined;
      this.applyNow = false;
      this.applyRetrying = false;
      this.applyJournaled().catch(() => undefined);
    }, ms);
    // The charges are durable already: a process that is otherwise done need not stay for them (close() applies them).
    this.applyTimer.unref();
  }

  /**
   * Writes the journaled charges to the tables, APPLY_BATCH to a transaction (writeToTables), one
   * application at a time. A batch the database fails to take goes back (it is durable in the journal)
   * and is tried again after `retryDelayMs`; so is one whose charges it refused, until they are set aside.
   */
  private applyJournaled(): Promise<void> {
    if (this.applying) return this.applying;
    if (this.unapplied.length === 0) return Promise.resolve();
    // Cleared in a callback, which runs after the assignment below whatever happens in applyAll.
    const run: Promise<void> = this.applyAll().finally(() => {
      if (this.applying === run) this.applying = undefined;
    });
    this.applying = run;
    return run;
  }

  private async applyAll(): Promise<void> {
    for (let first = true; this.unapplied.length > 0; first = false) {
      // A backlog goes a batch a turn: timers and I/O run between its transactions.
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      const batch = this.unapplied.splice(0, APPLY_BATCH);
      let retry: Queued[];
      try {
        retry = await this.writeToTables(batch);
      } catch (err) {
        this.unapplied = batch.concat(this.unapplied);
        this.options.onFlushError?.(err);
        this.scheduleApply(this.options.retryDelayMs ?? 1000);
        throw err;
      }
      if (retry.length > 0) {
        this.unapplied = retry.concat(this.unapplied);
        this.scheduleApply(this.options.retryDelayMs ?? 1000);
        return;
      }
    }
  }

  /**
   * Reads and admin writes see every charge made durable before them: journaled charges are applied
   * first (when the database fails to take them, the read goes on and says what the tables say).
   */
  private async applied(): Promise<void> {
    // While a failed application waits for its retry, a read says what the tables say (trying again
    // at each read would use up a refused charge's attempts in moments).
    if (this.applyRetrying) return;
    if (this.unapplied.length > 0 || this.applying) await this.applyJournaled().catch(() => undefined);
  }

  /**
   * At start: applies the charges other processes journaled and did not apply (they were killed, or
   * their machine stopped; a running one's are applied too, each once, and its files left to it), and
   * the rows an earlier version left in the journal table: a charge applied twice is recorded once.
   * Answers how many there were. A journal line that is not an entry is reported (onJournalProblem), its
   * file kept, and the rest applied.
   */
  async recoverJournal(paths?: ReadonlySet<string>): Promise<number> {
    if (!this.journal) return 0;
    let count = 0;
    const track = (charges: readonly Charge[], make: (mine: Charge[]) => JournalEntry): void => {
      // A charge pending here already (the same generation in another entry) is applied through that one.
      const mine = charges.filter((c) => !this.pendingCharges.has(c.id));
      if (mine.length === 0) return;
      const entry = make(mine);
      for (const charge of mine) this.unapplied.push(this.pend(charge, entry).queued);
      count += mine.length;
    };
    // A row that cannot be read stops the rows (applied later, by a start that can), not the files.
    const rows = paths ? [] : await journalTableRows.leftover(this.db).catch((err: unknown) => (this.options.onJournalProblem?.(err), []));
    for (const { seq, charges } of rows) {
      // A row this ledger tracks already is applied, and dropped, as it tracks it.
      if (this.rows.has(seq)) continue;
      track(charges, (mine) => {
        const entry = new JournalEntry(mine, undefined, seq);
        this.rows.set(seq, entry);
        return entry;
      });
    }
    const { entries, segments, problems, finalAt } = this.journal.leftover(paths);
    for (const problem of problems) this.options.onJournalProblem?.(new Error(problem));
    for (const { segment, charges } of entries) {
      track(charges, (mine) => {
        segment.open += 1;
        return new JournalEntry(mine, segment);
      });
    }
    // A segment whose charges were all pending here already, or set aside, has nothing to wait for.
    for (const segment of segments) this.journalStep((j) => j.release(segment));
    // Segments a running process may still write were applied and left: read again (what was added
    // since is applied too, each once) and deleted once no process writes them any more.
    if (finalAt !== undefined && !this.closing) {
      const young = new Set(segments.filter((g) => !g.deletable).map((g) => g.path));
      clearTimeout(this.leftoverTimer);
      this.leftoverTimer = setTimeout(
        () => {
          this.leftoverTimer = undefined;
          this.recoverJournal(young).catch((err: unknown) => this.options.onJournalProblem?.(err));
        },
        leftoverDelay(finalAt, Date.now()),
      );
      this.leftoverTimer.unref();
    }
    // Tables that refuse them now are retried (scheduleApply): the charges stay in the journal meanwhile.
    if (!this.applyRetrying) await this.applyJournaled().catch(() => undefined);
    return count;
  }

  /** Calls a listener; one that throws is reported, and what the ledger was doing goes on. */
  private tell(listener: () => void): void {
    try {
      listener();
    } catch (err) {
      this.options.onFlushError?.(err);
    }
  }

  /**
   * One step on the journal's files that must not stop what the ledger does (a commit landed, a start,
   * a stop): what it throws is reported (onJournalProblem). A file that could not be deleted is applied
   * again, each charge once, and deleted by a later start; a set-aside line that could not be written
   * lets a later start try that charge again.
   */
  private journalStep(step: (journal: ChargeJournal) => void): void {
    if (!this.journal) return;
    try {
      step(this.journal);
    } catch (err) {
      this.options.onJournalProblem?.(err);
    }
  }

  /**
   * One group commit (see writeCommit and CommitWriter), dropping the journal entries whose last
   * charges it applies, then its report to `onCommitted`.
   */
  private async writeTransaction(batch: Queued[]): Promise<void> {
    const complete = [...entriesOf(batch)].filter(([e, charges]) => e.completedBy(charges)).map(([e]) => e);
    const charges = batch.map((q) => q.charge);
    const updates = await writeCommit(
      this.db,
      this.writer,
      charges,
      complete.flatMap((e) => (e.row === undefined ? [] : [e.row])),
    );
    // Landed: what follows must not throw, or the batch would be written again as if it had not. The
    // entries are read again: a charge of the batch may have been journaled while it ran (PostgreSQL's
    // fallback journal), and its entry is done with it too.
    for (const [e, written] of entriesOf(batch)) {
      if (!e.done(written)) continue;
      const segment = e.segment;
      if (e.row !== undefined) this.rows.delete(e.row);
      if (segment) this.journalStep((j) => j.completed(segment));
    }
    charges.forEach((c) => this.unpend(c));
    try {
      this.options.onCommitted?.(updates);
    } catch (err) {
      this.options.onFlushError?.(err);
    }
  }

  listAccounts(query: AccountQuery): Promise<{ accounts: Account[]; total: number }> {
    return this.read(() => listAccounts(this.db, query));
  }

  listGenerations(query: GenerationQuery): Promise<Generation[]> {
    return this.read(() => listGenerations(this.db, query));
  }

  spend(query: SpendQuery): Promise<SpendRow[]> {
    return this.read(() => spend(this.db, query));
  }

  async getGeneration(id: string): Promise<Generation | undefined> {
    const pending = this.pendingCharges.get(id);
    if (pending) return { ...pending.queued.charge };
    const row = await this.read(() => this.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst());
    if (row) return toGeneration(row);
    // Still queued, or written while it was read: ask again.
    const late = this.pendingCharges.get(id);
    if (late) return { ...late.queued.charge };
    const again = await this.read(() => this.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst());
    return again ? toGeneration(again) : undefined;
  }

  /** A charge is in the ledger (or set aside for good): it no longer counts as pending. */
  private unpend(charge: Charge): void {
    if (this.pendingCharges.get(charge.id)?.queued.charge === charge) this.pendingCharges.delete(charge.id);
  }

  async getSetting(name: string): Promise<string | undefined> {
    const row = await this.read(() => this.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst());
    return row?.value;
  }

  async setSetting(name: string, value: string): Promise<void> {
    await this.write(() =>
      this.db
        .insertInto('settings')
        .values({ name, value })
        .onConflict((oc) => oc.column('name').doUpdateSet({ value }))
        .execute(),
    );
  }

  async settingOrCreate(name: string, make: () => string): Promise<{ value: string; created: boolean }> {
    const stored = await this.getSetting(name);
    if (stored !== undefined) return { value: stored, created: false };
    const value = make();
    // Of processes inserting at once, one insert takes; the others do nothing and read its value back.
    const inserted = await this.write(() =>
      this.db
        .insertInto('settings')
        .values({ name, value })
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('name')
        .execute(),
    );
    if (inserted.length > 0) return { value, created: true };
    const winner = await this.getSetting(name);
    if (winner === undefined) throw new Error(`setting "${name}" was stored by another process and then removed`);
    return { value: winner, created: false };
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /**
   * Writes what is queued, retrying until `shutdownDeadlineMs` has passed, then closes the database.
   * Answers with the charges it could not write (the caller logs them so that they can be replayed).
   */
  async close(): Promise<Charge[]> {
    this.closing = true;
    this.releaseAnswers();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearTimeout(this.applyTimer);
    this.applyTimer = undefined;
    clearTimeout(this.leftoverTimer);
    this.leftoverTimer = undefined;
    const deadline = Date.now() + (this.options.shutdownDeadlineMs ?? 30_000);
    const retryDelay = this.options.retryDelayMs ?? 1000;
    // Until every charge is durable (journaled or in the tables), or the deadline.
    const notDurable = () => [...this.pendingCharges.values()].some((p) => !p.journaled);
    // PostgreSQL: the charges its fallback journal holds are durable but still queued: they are written
    // too while the database takes them; once a try fails with nothing else left, the next start does.
    let fallbackWrites = !this.journalFirst;
    const unfinished = () => notDurable() || (fallbackWrites && (this.queue.length > 0 || this.flushing !== undefined));
    while (unfinished() && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      const left = deadline - Date.now();
      const attempt = this.flushQueued(false).then(
        () => true,
        () => false,
      );
      const ok = await Promise.race([attempt, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), left)))]);
      clearTimeout(timer);
      // A try that failed, or that sent a refused charge back to the queue (its try counted), is followed
      // by the retry's wait: tries of a refused charge as far apart as while serving. A try that wrote
      // its batch goes straight on to the next (a backlog is written a batch at a time).
      const refusedQueued = this.queue.some((q) => q.attempts > 0);
      if (!ok && !notDurable()) fallbackWrites = false;
      if (!unfinished()) break;
      if ((!ok || refusedQueued) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, Math.min(retryDelay, deadline - Date.now())));
    }
    // Journaled charges: one more try at the tables within the deadline; what stays there is durable,
    // and the next start applies it (recoverJournal).
    if ((this.unapplied.length > 0 || this.applying) && Date.now() < deadline) await settledWithin(this.applyJournaled(), deadline - Date.now());
    this.journalStep((j) => j.close());
    // The charges that are not durable are answered, for the caller to log in full; any later one is
    // handed to onChargeRejected as it comes (charge()).
    this.closed = true;
    const unwritten = [...this.pendingCharges.values()].filter((p) => !p.journaled).map((p) => p.queued.charge);
    // A database that stopped answering mid-transaction can keep its connection busy for good: the
    // unwritten charges are answered whether or not the pool closes in time.
    await settledWithin(this.db.destroy(), DESTROY_WAIT_MS);
    return unwritten;
  }
}
