import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { settledWithin } from '../settled-within.js';
import { sqliteHandleOf } from './database.js';
import type { Database } from './schema.js';

/** What one checkpoint found and did (SQLite's `PRAGMA wal_checkpoint` answer). */
export interface CheckpointResult {
  /** Frames in the WAL when it ran. */
  log: number;
  /** Frames of it now copied into the database file. */
  checkpointed: number;
}

export interface WalCheckpointerOptions {
  /** A checkpoint is asked for once this many writes went to the WAL since the last one was asked for. */
  everyWrites?: number;
  /** Past this many frames in the WAL, the writer waits for one checkpoint so that its next write starts the WAL over. */
  restartFrames?: number;
  /** Told when a checkpoint or the checkpoint thread failed; SQLite's own checkpoints (on the writer's thread) are back on when the thread stopped. */
  onError?: (err: Error) => void;
}

/**
 * About a thousand frames (SQLite's own threshold, `wal_autocheckpoint`, is 1,000) at the ~8–16 pages a
 * group commit writes.
 */
const EVERY_WRITES = 96;
/** 32 MiB of 4 KiB pages: under steady writes, the WAL starts over about this often. */
const RESTART_FRAMES = 8_192;
/** What the WAL file is cut back to when it starts over, if it grew past it (bytes). */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;
/** How long close() waits for the thread to close its connection. */
const CLOSE_WAIT_MS = 5_000;

/**
 * The checkpoint thread's code (CommonJS, run with `eval`): its own connection to the database file, and
 * one PASSIVE checkpoint for each message (it copies what it can and waits for no one).
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
parentPort.on('message', (m) => {
  if (m.stop) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ id: m.id, log: r.log, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String((err && err.message) || err) });
  }
});
`;

interface Pending {
  resolve(r: CheckpointResult): void;
  reject(err: Error): void;
  /** `writes` when it started: the writer wrote during it if they differ when it ends. */
  writesAtStart: number;
}

/**
 * Checkpoints a SQLite WAL on a thread of its own, so that the event loop never waits on one.
 *
 * In WAL mode a commit appends pages to the WAL; a checkpoint copies them back into the database file
 * and syncs both files to disk. SQLite runs it inside the commit that crosses 1,000 frames, on the
 * writer's thread: here ~10 ms of `fsync` on the event loop every few hundred requests, the largest
 * single cause of the gateway's p99 latency on SQLite (bench/README.md). With this, the writer's
 * connection does no checkpoints (`wal_autocheckpoint = 0`) and tells this thread after each of its
 * writes (`wrote()`); every `everyWrites` writes the thread checkpoints on its own connection
 * (PASSIVE: it never holds up the writer). Durability is unchanged: a commit is durable when it is
 * in the WAL, as before.
 *
 * The WAL starts over from its beginning only when a write begins with every frame of it copied.
 * A checkpoint during which the writer wrote nothing leaves it so; beside a busy writer that is rare,
 * and the file would only grow. So when a checkpoint finds `restartFrames` frames or more and the
 * writer wrote meanwhile (or a reader kept it from copying them all), the writer's next write (once
 * no checkpoint runs) first waits, without holding up the event loop, for one more checkpoint: a short
 * one, as it copies only what was written during the last; the write then starts the WAL over. A few
 * milliseconds' wait for the charges of one commit, every few thousand commits. Only group commits
 * are counted (`wrote()`): the ledger's other writes (admin work) are few, and the next checkpoint
 * copies them too.
 *
 * If the thread fails, SQLite's own checkpoints come back on (`wal_autocheckpoint = 1000`) and
 * `onError` is told. The thread never keeps the process alive.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  /** Checkpoints asked of the thread so far. */
  started = 0;
  private nextId = 1;
  /** Writes since the last checkpoint was asked for. */
  private sinceAsked = 0;
  /** Writes in all. */
  private writes = 0;
  private running: Promise<CheckpointResult> | undefined;
  private failed = false;
  private restartDue = false;
  private readonly restartFrames: number;
  private closing: Promise<void> | undefined;
  private readonly everyWrites: number;
  private readonly exited: Promise<void>;

  constructor(
    path: string,
    private readonly writer: BetterSqlite3.Database,
    private readonly options: WalCheckpointerOptions = {},
  ) {
    this.everyWrites = options.everyWrites ?? EVERY_WRITES;
    this.restartFrames = options.restartFrames ?? RESTART_FRAMES;
    writer.pragma('wal_autocheckpoint = 0');
    writer.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        path,
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
      // It runs one pragma a message: a small heap is plenty.
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    this.worker.unref();
    this.worker.on('message', (m: { id?: number; log?: number; checkpointed?: number; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(`WAL checkpoint failed: ${m.error}`));
      else {
        const log = m.log ?? 0;
        // Copied whole with nothing written during it: the next write starts the WAL over by itself.
        const whole = (m.checkpointed ?? 0) >= log && this.writes === p?.writesAtStart;
        if (p) this.restartDue = log >= this.restartFrames && !whole;
        p?.resolve({ log, checkpointed: m.checkpointed ?? 0 });
      }
    });
    this.worker.on('error', (err) => this.fail(err));
    this.exited = new Promise((resolve) =>
      this.worker.once('exit', () => {
        if (!this.closing) this.fail(new Error('the WAL checkpoint thread stopped'));
        resolve();
      }),
    );
  }

  /** Called after each write on the writer's connection: every `everyWrites` of them, a checkpoint is asked for. */
  wrote(): void {
    if (this.failed || this.closing) return;
    this.writes += 1;
    this.sinceAsked += 1;
    if (this.sinceAsked < this.everyWrites || this.running) return;
    this.sinceAsked = 0;
    this.checkpoint().catch((err: Error) => this.report(err));
  }

  /**
   * Called before each write on the writer's connection: undefined (write now), or, when the WAL is due
   * to start over, a promise to await first (one more checkpoint, so that the write starts the WAL over).
   */
  beforeWrite(): Promise<void> | undefined {
    // While one runs (a long one, maybe), the writer goes on; the one after it will tell.
    if (!this.restartDue || this.running || this.failed || this.closing) return undefined;
    this.restartDue = false;
    return this.checkpoint().then(
      () => undefined,
      (err: Error) => this.report(err),
    );
  }

  /** Checkpoints now (or joins the one running). */
  checkpoint(): Promise<CheckpointResult> {
    if (this.failed || this.closing) return Promise.reject(new Error('the WAL checkpoint thread is not running'));
    if (this.running) return this.running;
    const id = this.nextId++;
    this.started += 1;
    const writesAtStart = this.writes;
    const run: Promise<CheckpointResult> = new Promise<CheckpointResult>((resolve, reject) => this.pending.set(id, { resolve, reject, writesAtStart })).finally(
      () => {
        if (this.running === run) this.running = undefined;
        if (this.pending.size === 0) this.worker.unref();
      },
    );
    this.running = run;
    this.worker.ref(); // an answer is awaited
    this.worker.postMessage({ id });
    return run;
  }

  /** Stops the thread, which closes its connection (the last one to close checkpoints the whole WAL). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.failed) {
        this.worker.postMessage({ stop: true });
        if (!(await settledWithin(this.exited, CLOSE_WAIT_MS))) await this.worker.terminate();
      }
      this.rejectPending(new Error('the WAL checkpoint thread was closed'));
    })();
    return this.closing;
  }

  /** A checkpoint that failed; one the thread's end took with it was told by fail(). */
  private report(err: Error): void {
    if (!this.failed && !this.closing) this.options.onError?.(err);
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.rejectPending(err);
    // SQLite's own checkpoints again, on the writer's thread, so that the WAL cannot grow without end.
    if (this.writer.open) this.writer.pragma('wal_autocheckpoint = 1000');
    this.options.onError?.(err);
  }

  private rejectPending(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}

const checkpointers = new WeakMap<BetterSqlite3.Database, WalCheckpointer>();

/**
 * Starts checkpointing the WAL of `db` on a thread of its own, when it is a SQLite file open for
 * writing (the gateway's ledger); undefined otherwise (PostgreSQL, an in-memory or read-only database).
 */
export function startWalCheckpointer(db: Kysely<Database>, options: WalCheckpointerOptions = {}): WalCheckpointer | undefined {
  const sqlite = sqliteHandleOf(db);
  if (!sqlite || sqlite.memory || sqlite.readonly) return undefined;
  const checkpointer = new WalCheckpointer(sqlite.name, sqlite, options);
  checkpointers.set(sqlite, checkpointer);
  return checkpointer;
}

/** The checkpointer of the database on this better-sqlite3 handle, if one was started. */
export function walCheckpointerOf(sqlite: BetterSqlite3.Database): WalCheckpointer | undefined {
  return checkpointers.get(sqlite);
}
