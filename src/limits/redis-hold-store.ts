import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import type { Nano } from '../ledger/money.js';
import type { AdmitRequest, AdmitResult, ChargePeriods, HoldStore, HoldView, LedgerUpdate, MoneyView, SettleRequest } from './hold-store.js';
import { withinDeadline } from './limits-unavailable.js';
import { ExpiryHeap } from './expiry-heap.js';
import { APPLY, PUT, VIEW } from './hold-scripts.js';
import { TurnBatches } from './turn-batches.js';
import { IdMap } from '../id-map.js';

const BASE = 1_000_000_000n;

/**
 * How long a write nobody waits for (a renewal, a commit's record) may wait for an admission
 * to carry it to Redis. A settlement does not wait: until it is written, other processes would see
 * the request's running hold (its estimate) instead of its actual cost. (This process's own
 * admissions and views see every write queued before them.)
 */
const LAZY_WRITE_MS = 5;

/**
 * An admission is sent at the end of the event-loop turn after the one it was made in, with the
 * admissions the next poll brought (turn-batches.ts). Side by side on PostgreSQL + Redis (JSON, 8
 * clients) against the end of its own turn: 0.938 and 0.959 in two runs (SSE 0.968); waiting for the
 * second turn only when the first brought more admissions read 0.974.
 */
const GATHER_TURNS = 2;

/** An amount as the (hi, lo) pair the scripts take: ⌊n / 10⁹⌋ and n mod 10⁹ (lo never negative). */
function parts(n: Nano): [string, string] {
  let hi = n / BASE;
  let lo = n % BASE;
  if (lo < 0n) {
    hi -= 1n;
    lo += BASE;
  }
  return [hi.toString(), lo.toString()];
}

const whole = (hi: string, lo: string): Nano => BigInt(hi) * BASE + BigInt(lo);

/** The last deadline of a mirrored request's holds and pending charge; `none` when it has none. */
function lastDeadline(m: Mirrored, none: number): number {
  let last = -Infinity;
  for (const h of [m.b, m.r, m.k, m.pending]) if (h && h.until > last) last = h.until;
  return last === -Infinity ? none : last;
}

interface MirrorHold {
  amount: Nano;
  until: number;
  settling: boolean;
}

/** What this process knows of one request's state in Redis: enough to put it back. */
interface Mirrored {
  accountId: string;
  keyHash: string;
  b?: MirrorHold | undefined;
  r?: MirrorHold | undefined;
  k?: MirrorHold | undefined;
  pending?: { cost: Nano; byokUsage: Nano; periods: ChargePeriods; until: number } | undefined;
}

type Script = (...keysAndArgs: string[]) => Promise<unknown>;

/** One operation of the APPLY script (see hold-scripts.ts): its fields, and what its outcome changes here. */
interface Write {
  args: string[];
  /** Applied, at Redis's time `now`, with the operation's answer. */
  applied(now: number, answer: unknown): void;
  /** Not applied (or not known to be): `err` says why. */
  failed(err: unknown): void;
}

/**
 * An operation as the APPLY script takes it: one argument, its fields each ended by a tab (hold-scripts.ts).
 * One argument a field cost a RESP element each for ioredis to build and for Redis to read: ~36 a
 * request. No field holds a tab (ids, key hashes, periods and numbers), and one that did would shift
 * every field after it: it is refused instead.
 */
function opArgument(fields: readonly string[]): string {
  for (const f of fields) if (f.includes('\t')) throw new Error(`a hold store field holds a tab: ${JSON.stringify(f)}`);
  return `${fields.join('\t')}\t`;
}

/** The APPLY fields of a ledger commit's record. */
function recordArgs(update: LedgerUpdate): string[] {
  const a = update.account;
  const args = ['R', a ? [a.seq.toString(), ...parts(a.balance), ...parts(a.totalUsage)].join(' ') : ''];
  const fields: string[] = [];
  for (const key of update.keys ?? []) {
    for (const p of key.periods) fields.push(`${key.hash}|${p.period}`, [p.seq.toString(), ...parts(p.usage), ...parts(p.byokUsage)].join(' '));
  }
  const committed = update.committed ?? [];
  args.push(String(fields.length / 2), ...fields, String(committed.length), ...committed);
  return args;
}

interface Scripts {
  tollgateApply: Script;
  tollgateView: Script;
  tollgatePut: Script;
}

/**
 * The store's commands. It batches its writes itself (one APPLY per account a turn, turn-batches.ts),
 * so the client should send them as they come rather than auto-pipeline them too (ioredis's
 * `autoPipeliningIgnoredCommands`), which wraps each in a pipeline of one: ~7 % of a JSON request's
 * CPU on PostgreSQL + Redis, 2–3 % of a streamed one (bench/side-by-side.mjs). All of them, so that they keep the order they were
 * issued in (a command auto-pipelined goes out a turn later than one sent at once).
 */
export const HOLD_STORE_COMMANDS: readonly (keyof Scripts)[] = ['tollgateApply', 'tollgateView', 'tollgatePut'];

export interface RedisHoldStoreOptions {
  /** Prepended to every key, so that several gateways (or tests) can share one Redis. */
  prefix?: string;
  /** How long admission waits for Redis before it fails closed (503 limits_unavailable). */
  timeoutMs?: number;
  /** How often the store checks that Redis still has its state and writes what did not land (0: never, for tests). */
  syncEveryMs?: number;
  /** Tests: time from this clock instead of Redis's TIME. */
  clock?: Clock;
  /** Told when a background write fails (it is retried). */
  onError?: (err: unknown) => void;
}

/**
 * Holds and the money view in Redis (see hold-store.ts for the rules): every gateway process on one
 * Redis admits against one view, each check-and-update one Lua script (hold-scripts.ts) on the
 * account's keys, which share a hash tag and so one Redis Cluster slot. Time is Redis's own.
 *
 * A round trip to Redis costs this process far more CPU than the script's work (a write to another
 * process's socket, and reading its answer), so requests share them: what the process asks of an
 * account (admissions, settlements, renewals, records of ledger commits) is queued and sent in one
 * APPLY call per account, applied in order, and ioredis pipelines the accounts' calls into one write.
 * An admission is sent when the event-loop turn ends, with everything queued by then; a write nobody
 * waits (a renewal, a commit's record) waits up to LAZY_WRITE_MS for one (turn-batches.ts).
 *
 * The store keeps a mirror of this process's running and settling holds and pending charges: a write
 * that failed is written again from it, and when Redis comes back empty (its restart lost them) the
 * whole mirror is put back, within `syncEveryMs`. Admission fails closed when Redis does not answer
 * within `timeoutMs`; settling, renewing and recording never throw (they are retried).
 */
export class RedisHoldStore implements HoldStore {
  private readonly redis: Redis & Scripts;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly mirror = new IdMap<Mirrored>();
  /**
   * When each mirrored request may have nothing left in Redis: at or before its last deadline, so the
   * sync forgets what lapsed in O(log n) an entry (a request's settling hold stays for the settlement
   * window, so the mirror holds a minute of requests; scanning all of them every second cost ~3 µs a
   * request and stopped the event loop for milliseconds). An entry whose deadline moved on meanwhile
   * is put back at its new one.
   */
  private expiries = new ExpiryHeap();
  private readonly dirty = new Set<string>();
  private readonly unrecorded: LedgerUpdate[] = [];
  /** Redis's clock less this process's, as last seen. */
  private offset = 0;
  private readonly alive: string;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  /** Admissions, settlements, renewals and records on their way: one APPLY call per account and write. */
  private readonly writes = new TurnBatches<Write>((accountId, ops) => this.apply(accountId, ops), { lazyMs: LAZY_WRITE_MS, gatherTurns: GATHER_TURNS });

  constructor(
    redis: Redis,
    private readonly options: RedisHoldStoreOptions = {},
  ) {
    this.prefix = options.prefix ?? 'tollgate:';
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.alive = `${this.prefix}alive:${randomUUID()}`;
    const scripts: Array<[(typeof HOLD_STORE_COMMANDS)[number], string]> = [
      ['tollgateApply', APPLY],
      ['tollgateView', VIEW],
      ['tollgatePut', PUT],
    ];
    for (const [name, lua] of scripts) if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: 5, lua });
    this.redis = redis as Redis & Scripts;
    const every = options.syncEveryMs ?? 1000;
    if (every > 0) {
      this.timer = setInterval(() => void this.sync(), every);
      this.timer.unref();
    }
  }

  private keys(accountId: string): string[] {
    const tag = `${this.prefix}{${accountId}}:`;
    return [`${tag}s`, `${tag}h`, `${tag}t`, `${tag}p`, `${tag}z`];
  }

  private now(): string {
    return this.options.clock ? String(this.options.clock.now()) : '';
  }

  /** Redis's time as this process estimates it. */
  private estimatedNow(): number {
    return this.options.clock ? this.options.clock.now() : Date.now() + this.offset;
  }

  private saw(storeNow: number): void {
    if (!this.options.clock) this.offset = storeNow - Date.now();
  }

  private call(script: keyof Scripts, accountId: string, args: string[]): Promise<unknown> {
    return this.redis[script](...this.keys(accountId), this.now(), ...args);
  }

  /** One APPLY call of operations already in the script's form (opArgument) on the account's keys, within the store's deadline. */
  private applyCall(accountId: string, encoded: string[]): Promise<unknown> {
    return withinDeadline(this.timeoutMs, () => this.call('tollgateApply', accountId, encoded));
  }

  admit(req: AdmitRequest): Promise<AdmitResult> {
    const args = ['A', req.id, String(req.leaseMs), req.refuseNegative ? '1' : '0'];
    if (req.key) args.push(req.key.hash, req.key.period, req.key.includeByok ? '1' : '0', ...parts(req.key.limit), ...parts(req.key.amount));
    else args.push('', '', '0', '0', '0', '0', '0');
    args.push(...(req.balance === undefined ? ['', '0', '0'] : ['1', ...parts(req.balance)]));
    const b = req.budget;
    args.push(
      ...(b ? ['1', ...parts(b.amount), ...parts(b.threshold), b.fractionPpm.toString(), ...parts(b.ceiling)] : ['', '0', '0', '0', '0', '0', '0', '0']),
    );
    return new Promise((resolve, reject) => {
      const op: Write = {
        args,
        applied: (_now, answer) => resolve(this.admitted(req, (answer as string).split('\t'))),
        failed: (err) => {
          // The holds may have been taken: forget them here, and take them back from Redis when it answers.
          if (!this.mirror.has(req.id)) this.watch(req.id, { accountId: req.accountId, keyHash: req.key?.hash ?? '' });
          this.dirty.add(req.id);
          reject(err);
        },
      };
      void this.writes.add(req.accountId, op, true);
    });
  }

  /** What an admission's answer from the APPLY script says (its fields, which come as one string separated by tabs). */
  private admitted(req: AdmitRequest, r: string[]): AdmitResult {
    const b = req.budget;
    const a = (i: number) => r[i] as string;
    switch (a(0)) {
      case 'ok': {
        const now = Number(a(1));
        this.saw(now);
        const until = now + req.leaseMs;
        const hold = (amount: Nano): MirrorHold => ({ amount, until, settling: false });
        this.watch(req.id, {
          accountId: req.accountId,
          keyHash: req.key?.hash ?? '',
          k: req.key ? hold(req.key.amount) : undefined,
          r: req.balance === undefined ? undefined : hold(req.balance),
          b: b && a(4) === '1' ? hold(b.amount) : undefined,
        });
        return { ok: true, now, balance: whole(a(2), a(3)) };
      }
      case 'snapshot':
        return { ok: false, refused: 'snapshot', account: a(1) === '1', key: a(2) === '1' };
      case 'negative':
        return { ok: false, refused: 'negative', balance: whole(a(1), a(2)) };
      case 'key':
        return { ok: false, refused: 'key', used: whole(a(1), a(2)), held: whole(a(3), a(4)) };
      case 'balance':
        return { ok: false, refused: 'balance', balance: whole(a(1), a(2)), held: whole(a(3), a(4)) };
      case 'weight':
        return { ok: false, refused: 'weight', budget: whole(a(1), a(2)) };
      default: {
        const holds: HoldView[] = [];
        for (let i = 6; i + 3 < r.length; i += 4) holds.push({ amount: whole(a(i), a(i + 1)), until: Number(a(i + 2)), settling: a(i + 3) === '1' });
        return { ok: false, refused: 'budget', budget: whole(a(1), a(2)), held: whole(a(3), a(4)), holds, now: Number(a(5)) };
      }
    }
  }

  settle(req: SettleRequest): Promise<void> {
    // The mirror changes first, so that a commit recorded while this write is on its way (which drops
    // the pending charge) is never undone by this settlement's answer.
    const m = this.mirror.get(req.id) ?? { accountId: req.accountId, keyHash: req.keyHash };
    const estimated = this.estimatedNow();
    const settling = m.b && req.cost > 0n ? { amount: req.cost, until: estimated + req.windowMs, settling: true } : undefined;
    const pending =
      req.cost > 0n || req.byokUsage > 0n ? { cost: req.cost, byokUsage: req.byokUsage, periods: req.periods, until: estimated + req.leaseMs } : undefined;
    Object.assign(m, { keyHash: req.keyHash, b: settling, r: undefined, k: undefined, pending });
    this.keep(req.id, m);
    const { daily, weekly, monthly } = req.periods;
    const args = ['S', req.id, ...parts(req.cost), ...parts(req.byokUsage), req.keyHash, daily, weekly, monthly, String(req.windowMs), String(req.leaseMs)];
    return this.writes.add(
      req.accountId,
      {
        args,
        applied: (now) => {
          // Redis's own deadlines, for when the mirror is put back.
          if (settling && m.b === settling) settling.until = now + req.windowMs;
          if (pending && m.pending === pending) pending.until = now + req.leaseMs;
        },
        failed: () => this.dirty.add(req.id),
      },
      // Not lazy: the settlement replaces the running hold (the estimate) with the actual cost, which
      // may be more; it goes out this turn, racing the ledger's commit as the answer waits for it, so
      // that another process admitting the same key next sees the actual cost.
      true,
    );
  }

  renew(accountId: string, id: string, leaseMs: number): Promise<void> {
    const m = this.mirror.get(id);
    const extend = (now: number) => {
      if (!m) return;
      for (const h of [m.b, m.r, m.k]) if (h && !h.settling) h.until = Math.max(h.until, now + leaseMs);
      if (m.pending) m.pending.until = Math.max(m.pending.until, now + leaseMs);
    };
    return this.writes.add(
      accountId,
      {
        args: ['N', id, m?.keyHash ?? '', String(leaseMs)],
        applied: extend,
        failed: () => {
          extend(this.estimatedNow());
          if (m) this.dirty.add(id);
        },
      },
      false,
    );
  }

  record(update: LedgerUpdate): Promise<void> {
    for (const id of update.committed ?? []) {
      const m = this.mirror.get(id);
      if (!m) continue;
      m.pending = undefined;
      this.keep(id, m);
    }
    // Lazy: until it lands, Redis counts these charges as pending beside the snapshot before them,
    // which is exact. Another process's later record that lands first waits for it (the APPLY
    // script's record_in_order), so nothing is counted twice however long this one takes.
    return this.writes.add(update.accountId, { args: recordArgs(update), applied: () => undefined, failed: () => this.unrecorded.push(update) }, false);
  }

  /**
   * One account's queued operations in one call; each is told its outcome. Never throws. An operation
   * that cannot be put in the script's form fails alone; the others go.
   */
  private async apply(accountId: string, queued: Write[]): Promise<void> {
    const ops: Write[] = [];
    const encoded: string[] = [];
    for (const op of queued) {
      try {
        encoded.push(opArgument(op.args));
        ops.push(op);
      } catch (err) {
        op.failed(err);
        this.options.onError?.(err);
      }
    }
    if (ops.length === 0) return;
    let answers: unknown[];
    try {
      answers = (await this.applyCall(accountId, encoded)) as unknown[];
    } catch (err) {
      for (const op of ops) op.failed(err);
      this.options.onError?.(err);
      return;
    }
    const now = Number(answers[0]);
    this.saw(now);
    // An answer an operation cannot read fails that operation alone: the others are still told theirs.
    ops.forEach((op, i) => {
      try {
        op.applied(now, answers[i + 1]);
      } catch (err) {
        op.failed(err);
        this.options.onError?.(err);
      }
    });
  }

  async view(accountId: string, key?: { hash: string; periods: readonly string[] }): Promise<MoneyView | undefined> {
    // A view sees what this process wrote before it (a credit entry just recorded, a request just
    // settled): the account's queued writes go first, on the same connection.
    const written = this.writes.flushKey(accountId);
    const viewing = withinDeadline(this.timeoutMs, () => this.call('tollgateView', accountId, [key?.hash ?? '', ...(key?.periods ?? [])]));
    const [, r] = (await Promise.all([written, viewing])) as [void, string[]];
    const a = (i: number) => r[i] as string;
    if (a(0) === 'none') return undefined;
    let keyUsage: MoneyView['keyUsage'];
    if (key) {
      keyUsage = new Map();
      for (let i = 0; i < key.periods.length; i++) {
        const at = 8 + 4 * i;
        if (a(at) === 'missing') {
          keyUsage = undefined;
          break;
        }
        keyUsage.set(key.periods[i] as string, { usage: whole(a(at), a(at + 1)), byokUsage: whole(a(at + 2), a(at + 3)) });
      }
    }
    return { balance: whole(a(0), a(1)), totalUsage: whole(a(2), a(3)), keyUsage, budgetHeld: whole(a(4), a(5)), runningHeld: whole(a(6), a(7)) };
  }

  /** Keeps a request in the mirror while it has anything in Redis. */
  private keep(id: string, m: Mirrored): void {
    if (m.b || m.r || m.k || m.pending) this.watch(id, m);
    else this.mirror.delete(id);
  }

  /** Puts a request in the mirror; one new to it is looked at again by its last deadline (`expiries`). */
  private watch(id: string, m: Mirrored): void {
    if (!this.mirror.has(id)) this.expiries.push({ at: lastDeadline(m, this.estimatedNow()), id, version: 0 });
    this.mirror.set(id, m);
  }

  /**
   * Once a tick: when Redis lost this process's state (restarted empty), puts the whole mirror back;
   * writes again whatever did not land; forgets what lapsed. Exposed for tests.
   */
  sync(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    try {
      const kept = await withinDeadline(this.timeoutMs, () => this.redis.set(this.alive, '1', 'PX', 30_000, 'XX'));
      if (kept === null) {
        // First tick, or Redis lost what it had: everything this process holds goes back.
        for (const [id] of this.mirror.entries()) this.dirty.add(id);
        await withinDeadline(this.timeoutMs, () => this.redis.set(this.alive, '1', 'PX', 30_000));
      }
      for (const id of [...this.dirty]) {
        const m = this.mirror.get(id);
        const hold = (h: MirrorHold | undefined) => (h ? [...parts(h.amount), String(h.until), h.settling ? '1' : '0'].join(' ') : '');
        const p = m?.pending;
        const pending = p ? [...parts(p.cost), ...parts(p.byokUsage), p.periods.daily, p.periods.weekly, p.periods.monthly, String(p.until)].join(' ') : '';
        if (m) await withinDeadline(this.timeoutMs, () => this.call('tollgatePut', m.accountId, [id, m.keyHash, hold(m.b), hold(m.r), hold(m.k), pending]));
        this.dirty.delete(id);
      }
      while (this.unrecorded.length > 0) {
        const update = this.unrecorded[0] as LedgerUpdate;
        let encoded: string;
        try {
          encoded = opArgument(recordArgs(update));
        } catch (err) {
          // It can never be written: reported and dropped, not left to hold back the records behind it.
          this.options.onError?.(err);
          this.unrecorded.shift();
          continue;
        }
        await this.applyCall(update.accountId, [encoded]);
        this.unrecorded.shift();
      }
    } catch (err) {
      this.options.onError?.(err);
    }
    this.forgetLapsed(this.estimatedNow());
  }

  /** Drops from the mirror the requests whose every hold and pending charge lapsed by `now`. */
  private forgetLapsed(now: number): void {
    for (let e = this.expiries.peek(); e && e.at <= now; e = this.expiries.peek()) {
      this.expiries.pop();
      const m = this.mirror.get(e.id);
      if (!m) continue;
      const last = lastDeadline(m, now);
      if (last <= now) this.mirror.delete(e.id);
      else this.expiries.push({ at: last, id: e.id, version: 0 });
    }
    // Entries of requests forgotten otherwise (recorded, settled for nothing) wait for their time;
    // when they outnumber the mirror, the heap is made again from it.
    if (this.expiries.size > 2 * this.mirror.size + 1024) {
      const fresh = new ExpiryHeap();
      for (const [id, m] of this.mirror.entries()) fresh.push({ at: lastDeadline(m, now), id, version: 0 });
      this.expiries = fresh;
    }
  }

  /** Writes what is queued and stops the background sync; the client belongs to main.ts, which closes it. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.writes.flush();
    await this.syncing;
  }
}
