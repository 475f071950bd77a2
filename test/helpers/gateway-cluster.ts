import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { openDatabase } from '../../src/ledger/database.js';
import { creditsFromJson, formatCredits } from '../../src/ledger/money.js';
import { ScriptedUpstream, upstreamAnswer, type Received } from './scripted-upstream.js';
import { serveProcess, writeYaml, type ServeProcess } from './serve-process.js';
import { instant } from './instant.js';

/**
 * N gateway processes (`node dist/cli.js serve`) on one config: one PostgreSQL database, one Redis and
 * key prefix, one admin token and secrets key. Two scripted providers on loopback serve them: `held`
 * keeps every request open until `release()` (and counts how many it holds at once), `quick` answers
 * at once (or after `quickDelayMs`). Every upstream answer reports 5 prompt tokens and the completion
 * tokens the request asked for (`tokens=N` in its message, else its max_tokens): with a prompt price of
 * 0 a request's cost is tokens × completion price, and its estimate max_tokens × completion price.
 * Every wait is bounded; every signal goes to one PID.
 */

/** A model of the cluster's config, served by one of the two upstreams. */
export interface ModelSpec {
  id: string;
  upstream: 'held' | 'quick';
  /** Credits per completion token, a decimal string; the prompt price is always 0. */
  completion: string;
  /** The model's free-model per-minute override. */
  per_minute?: number;
}

export interface ClusterOptions {
  /** Names the test in printed lines. */
  label: string;
  databaseUrl: string;
  redisUrl: string;
  /** `redis_key_prefix`; default a fresh one per cluster. */
  redisKeyPrefix?: string;
  /** Delete the prefix's keys on stop (the shared Redis; a private one is simply stopped). */
  cleanRedis?: boolean;
  processes?: number;
  /** `limits.hold_lease_ms`. */
  holdLeaseMs?: number;
  /** Merged into the config's `limits` (in_flight, free_models, …). */
  limits?: Record<string, unknown>;
  /** Merged into the config's `ledger`. */
  ledger?: Record<string, unknown>;
  models?: ModelSpec[];
  /** How long `quick` takes to answer. */
  quickDelayMs?: number;
}

/** What a client saw for one chat completion. */
export interface Outcome {
  tag: string;
  /** The process it was sent to. */
  proc: number;
  model: string;
  sentAt: number;
  endAt: number;
  /** The HTTP status, or 0 when no answer came (`failure` says why). */
  status: number;
  failure?: 'timeout' | 'connection';
  /** `error.metadata.reason`, `limit_source`, `limit` of a refusal. */
  reason?: string;
  limitSource?: string;
  limit?: string;
  retryAfter: string | null;
  /** A 200 answer received in full: its generation id and the cost it stated, in nanocredits. */
  id?: string;
  cost?: bigint;
  message?: string;
}

export interface ChatRequest {
  model: string;
  maxTokens: number;
  /** Completion tokens the upstream reports (default: maxTokens). */
  tokens?: number;
  /** How long the client waits for the whole answer before it gives up (a hang). */
  boundMs?: number;
}

export interface Load {
  /** Every outcome so far, in the order they ended. */
  readonly outcomes: Outcome[];
  /** Stops the workers once their current requests end (each is bounded), and answers every outcome. */
  stop(): Promise<Outcome[]>;
}

/** The ledger's view of one account against what its clients received. */
export interface LedgerAudit {
  /** Answers received in full (status 200 with a generation id). */
  received: number;
  /** Generations recorded for the account. */
  charged: number;
  /** Received in full but not in the ledger (money lost). */
  missing: string[];
  /** In the ledger at another cost than the answer stated, or answered otherwise by /api/v1/generation. */
  wrongCost: string[];
  /** In the ledger but not received in full by the client. */
  unreceived: string[];
  purchased: bigint;
  /** The balance as stored, and as the admin API reports it (undefined when no process was alive to ask). */
  balance: bigint;
  adminBalance: bigint | undefined;
  sumReceived: bigint;
  sumCharged: bigint;
  /**
   * What the operator lost: the stated cost of each answer received in full less what the ledger charged
   * for it (all of it when missing), plus any amount by which the balance exceeds purchased − charges.
   * Negative when clients were charged more than they were told.
   */
  moneyLost: bigint;
}

export interface GatewayCluster {
  readonly procs: ServeProcess[];
  readonly held: ScriptedUpstream;
  readonly quick: ScriptedUpstream;
  readonly adminToken: string;
  readonly redisKeyPrefix: string;
  readonly configFile: string;
  base(i: number): string;
  alive(i: number): boolean;
  /** Indexes of live processes, in order. */
  aliveIndexes(): number[];
  /** The next live process, round-robin. */
  next(): number;
  admin(method: string, path: string, body?: unknown, proc?: number): Promise<{ status: number; body: any }>;
  /** A prepaid (by default) account with `credits` purchased and one key. */
  createAccount(opts: {
    name: string;
    credits: number;
    type?: string;
    key?: Record<string, unknown>;
    proc?: number;
  }): Promise<{ id: string; key: string; hash: string }>;
  /** GET with an API key; answers status and JSON body. */
  get(proc: number, path: string, key: string, boundMs?: number): Promise<{ status: number; body: any }>;
  chat(proc: number, key: string, req: ChatRequest): Promise<Outcome>;
  /** Workers sending `req` round-robin over the live processes (or `procs`), until stopped. */
  load(key: string, req: ChatRequest, workers: number, procs?: number[]): Load;
  /** SIGKILL to process i's PID; resolves once it is gone. */
  kill9(i: number): Promise<void>;
  /** Processes that exited without being killed by the test, with how. */
  unexpectedExits(): string[];
  /** Waits (bounded) until the `held` upstream holds `n` requests. */
  waitHolding(n: number, timeoutMs?: number): Promise<void>;
  audit(accountId: string, key: string, outcomes: readonly Outcome[]): Promise<LedgerAudit>;
  /** Audits until every answer received in full is in the ledger, or `timeoutMs` passed (charges written late). */
  auditSettled(accountId: string, key: string, outcomes: readonly Outcome[], timeoutMs?: number): Promise<LedgerAudit>;
  /** Prints one line, prefixed with the label. */
  note(line: string): void;
  /** The last lines each process wrote, for a failure message. */
  tails(lines?: number): string;
  stop(): Promise<void>;
}

const ADMIN_PATH = '/api/v1/admin';
const DEFAULT_BOUND_MS = 10_000;
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `cond` every 25 ms until it holds; fails after `timeoutMs` naming `what`. */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Credits as exact decimal text, for printed figures. */
export const credits = (nano: bigint) => formatCredits(nano);

/** A JSON amount (credits, at most 15 significant digits) as nanocredits, exactly (see money.ts creditsFromJson). */
export const nano = (amount: unknown): bigint => creditsFromJson(Number(amount));

/** Counts outcomes by status and refusal, e.g. {"200": 20, "402 in_flight_budget_exhausted": 70}. */
export function tally(outcomes: readonly Outcome[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const k = o.status === 0 ? `no answer (${o.failure})` : [o.status, o.reason ?? o.limit ?? o.limitSource].filter(Boolean).join(' ');
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

/** One outcome in a line, times relative to `t0`, for failure messages. */
export function describeOutcome(o: Outcome, t0: number): string {
  const what = o.status === 0 ? `no answer (${o.failure}: ${o.message})` : `${o.status} ${o.reason ?? o.limit ?? o.limitSource ?? ''}`.trim();
  return `${o.tag} to process ${o.proc} sent at +${Math.round(o.sentAt - t0)} ms: ${what} after ${Math.round(o.endAt - o.sentAt)} ms`;
}

/** Completion tokens an upstream answer reports: `tokens=N` in the request's message, else its max_tokens, else 1. */
function tokensOf(r: Received): number {
  const messages = (r.body.messages ?? []) as Array<{ content?: unknown }>;
  const m = /tokens=(\d+)/.exec(String(messages.at(-1)?.content ?? ''));
  if (m) return Number(m[1]);
  const max = r.body.max_tokens;
  return typeof max === 'number' ? max : 1;
}

const defaultModels: ModelSpec[] = [
  { id: 't/held', upstream: 'held', completion: '0.01' },
  { id: 't/quick', upstream: 'quick', completion: '0.01' },
  { id: 't/quick:free', upstream: 'quick', completion: '0' },
];

/** Deletes every key under `prefix` (only those) from the Redis at `url`. */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

export async function startGatewayCluster(opts: ClusterOptions): Promise<GatewayCluster> {
  const n = opts.processes ?? 3;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-'));
  const adminToken = `cluster-admin-${randomBytes(12).toString('hex')}`;
  const redisKeyPrefix = opts.redisKeyPrefix ?? `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const held = new ScriptedUpstream();
  const quick = new ScriptedUpstream();
  const [heldUrl, quickUrl] = await Promise.all([held.start(), quick.start()]);
  held.script({ kind: 'json', body: null, bodyFor: (r) => upstreamAnswer(tokensOf(r)), hold: true });
  quick.script({ kind: 'json', body: null, bodyFor: (r) => upstreamAnswer(tokensOf(r)), delayMs: opts.quickDelayMs });

  const models = (opts.models ?? defaultModels).map((m) => ({
    id: m.id,
    context_length: 100_000,
    ...(m.per_minute === undefined ? {} : { per_minute: m.per_minute }),
    endpoints: [{ provider: m.upstream, model: 'm', pricing: { prompt: '0', completion: m.completion } }],
  }));
  const config = {
    listen: { host: '127.0.0.1', port: 0 },
    database_url: opts.databaseUrl,
    redis_url: opts.redisUrl,
    redis_key_prefix: redisKeyPrefix,
    admin_token: adminToken,
    secrets_key: randomBytes(32).toString('base64'),
    log_level: 'warn',
    limits: {
      ddos: { per_ip_per_second: 1_000_000 },
      ...(opts.holdLeaseMs === undefined ? {} : { hold_lease_ms: opts.holdLeaseMs }),
      ...opts.limits,
    },
    // One fallback journal directory for the cluster's processes (they share one database), not the working directory.
    ledger: { journal_dir: join(dir, 'charges'), ...opts.ledger },
    providers: [
      { id: 'held', type: 'openai', base_url: heldUrl },
      { id: 'quick', type: 'openai', base_url: quickUrl },
    ],
    models,
  };
  // JSON is YAML: the file is exactly this object.
  const configFile = writeYaml(dir, JSON.stringify(config, null, 2));

  const procs: ServeProcess[] = [];
  const killedByTest = new Set<number>();
  const stopUpstreams = async () => {
    await Promise.all([held.stop(), quick.stop()]);
  };
  try {
    // All start at once on the fresh database, as replicas of one deployment do (first start is race-free).
    const started = await Promise.allSettled(Array.from({ length: n }, () => serveProcess(configFile, { timeoutMs: START_TIMEOUT_MS })));
    for (const r of started) if (r.status === 'fulfilled') procs.push(r.value);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    for (const p of procs) p.proc.kill('SIGKILL');
    await stopUpstreams();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const alive = (i: number) => {
    const p = procs[i]?.proc;
    return p !== undefined && p.exitCode === null && p.signalCode === null;
  };
  const aliveIndexes = () => procs.map((_, i) => i).filter(alive);
  let rr = 0;
  const next = () => {
    const live = aliveIndexes();
    if (live.length === 0) throw new Error(`${opts.label}: no gateway process is alive`);
    return live[rr++ % live.length] as number;
  };
  const base = (i: number) => (procs[i] as ServeProcess).base;

  const admin: GatewayCluster['admin'] = async (method, path, body, proc = 0) => {
    const res = await fetch(`${base(proc)}${ADMIN_PATH}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(DEFAULT_BOUND_MS),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  const createAccount: GatewayCluster['createAccount'] = async ({ name, credits: amount, type, key, proc = 0 }) => {
    const acct = await admin('POST', '/accounts', { name, ...(type ? { type } : {}) }, proc);
    if (acct.status !== 201) throw new Error(`creating account ${name}: ${acct.status} ${JSON.stringify(acct.body)}`);
    const id = acct.body.data.id as string;
    if (amount > 0) {
      const c = await admin('POST', `/accounts/${id}/credits`, { amount }, proc);
      if (c.status !== 200) throw new Error(`adding credits to ${name}: ${c.status} ${JSON.stringify(c.body)}`);
    }
    const k = await admin('POST', `/accounts/${id}/keys`, key ?? {}, proc);
    if (k.status !== 201) throw new Error(`creating a key for ${name}: ${k.status} ${JSON.stringify(k.body)}`);
    return { id, key: k.body.key as string, hash: k.body.data.hash as string };
  };

  const get: GatewayCluster['get'] = async (proc, path, key, boundMs = DEFAULT_BOUND_MS) => {
    const res = await fetch(`${base(proc)}${path}`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(boundMs) });
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: res.status, body };
  };

  let tags = 0;
  const chat: GatewayCluster['chat'] = async (proc, key, req) => {
    const tag = `${opts.label}-${tags++}`;
    const sentAt = instant();
    const outcome: Outcome = { tag, proc, model: req.model, sentAt, endAt: sentAt, status: 0, retryAfter: null };
    try {
      const res = await fetch(`${base(proc)}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: req.model,
          max_tokens: req.maxTokens,
          messages: [{ role: 'user', content: `tag=${tag} tokens=${req.tokens ?? req.maxTokens}` }],
        }),
        signal: AbortSignal.timeout(req.boundMs ?? DEFAULT_BOUND_MS),
      });
      outcome.retryAfter = res.headers.get('retry-after');
      const text = await res.text();
      outcome.status = res.status;
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        outcome.message = text.slice(0, 200);
      }
      if (res.status === 200 && typeof body?.id === 'string' && body.usage?.cost !== undefined) {
        outcome.id = body.id;
        outcome.cost = nano(body.usage.cost);
      } else if (body?.error) {
        const meta = body.error.metadata ?? {};
        outcome.reason = meta.reason;
        outcome.limitSource = meta.limit_source;
        // metadata.limit names the platform limit of a 429 (a key-limit 402 carries its amount there).
        if (typeof meta.limit === 'string') outcome.limit = meta.limit;
        outcome.message = String(body.error.message ?? '').slice(0, 200);
      }
    } catch (err) {
      const name = (err as Error).name;
      outcome.failure = name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'connection';
      outcome.message = String((err as Error).cause ?? (err as Error).message).slice(0, 200);
    }
    outcome.endAt = instant();
    return outcome;
  };

  const load: GatewayCluster['load'] = (key, req, workers, only) => {
    const outcomes: Outcome[] = [];
    let stopped = false;
    let turn = 0;
    const pick = () => {
      const live = (only ?? aliveIndexes()).filter(alive);
      if (live.length === 0) return undefined;
      return live[turn++ % live.length];
    };
    const worker = async () => {
      while (!stopped) {
        const proc = pick();
        if (proc === undefined) return;
        const o = await chat(proc, key, req);
        outcomes.push(o);
        // A refusal comes back at once: pace the retries so the load stays a load, not a spin.
        if (o.status !== 200) await sleep(50);
      }
    };
    const running = Promise.all(Array.from({ length: workers }, () => worker()));
    return {
      outcomes,
      async stop() {
        stopped = true;
        await running;
        return outcomes;
      },
    };
  };

  const kill9: GatewayCluster['kill9'] = async (i) => {
    const p = procs[i] as ServeProcess;
    killedByTest.add(i);
    p.proc.kill('SIGKILL');
    await p.exited;
  };

  const unexpectedExits = () =>
    procs.flatMap((p, i) =>
      killedByTest.has(i) || alive(i) ? [] : [`process ${i} exited (${p.proc.exitCode ?? p.proc.signalCode}): ${p.output().split('\n').slice(-8).join(' | ')}`],
    );

  const waitHolding: GatewayCluster['waitHolding'] = (count, timeoutMs = 15_000) =>
    until(() => held.holding >= count, timeoutMs, `${count} requests held at the upstream (${held.holding} are)`);

  const audit: GatewayCluster['audit'] = async (accountId, key, outcomes) => {
    const received = outcomes.filter((o) => o.status === 200 && o.id !== undefined);
    const db = openDatabase(opts.databaseUrl);
    try {
      const acct = await db.selectFrom('accounts').select(['balance', 'total_purchased']).where('id', '=', accountId).executeTakeFirstOrThrow();
      const gens = await db.selectFrom('generations').select(['id', 'total_cost']).where('account_id', '=', accountId).execute();
      const charged = new Map(gens.map((g) => [g.id, BigInt(String(g.total_cost))]));
      const receivedIds = new Set(received.map((o) => o.id as string));
      const missing = received.filter((o) => !charged.has(o.id as string)).map((o) => o.id as string);
      const wrongCost = received.filter((o) => charged.has(o.id as string) && charged.get(o.id as string) !== o.cost).map((o) => o.id as string);
      // What a client was told, as /api/v1/generation tells it (a few at a time), when a process is alive to ask.
      const asked = aliveIndexes()[0];
      for (let i = 0; asked !== undefined && i < received.length; i += 16) {
        await Promise.all(
          received.slice(i, i + 16).map(async (o) => {
            if (!charged.has(o.id as string)) return;
            const g = await get(asked, `/api/v1/generation?id=${encodeURIComponent(o.id as string)}`, key);
            if (g.status !== 200 || nano(g.body.data.total_cost) !== o.cost) wrongCost.push(`${o.id} (via /api/v1/generation: ${g.status})`);
          }),
        );
      }
      const adminView = asked === undefined ? undefined : await admin('GET', `/accounts/${accountId}`, undefined, asked);
      const purchased = BigInt(String(acct.total_purchased));
      const balance = BigInt(String(acct.balance));
      const sumCharged = [...charged.values()].reduce((s, c) => s + c, 0n);
      const undercharged = received.reduce((s, o) => s + (o.cost as bigint) - (charged.get(o.id as string) ?? 0n), 0n);
      return {
        received: received.length,
        charged: gens.length,
        missing,
        wrongCost,
        unreceived: gens.filter((g) => !receivedIds.has(g.id)).map((g) => g.id),
        purchased,
        balance,
        adminBalance: adminView === undefined ? undefined : nano(adminView.body?.data?.balance),
        sumReceived: received.reduce((s, o) => s + (o.cost as bigint), 0n),
        sumCharged,
        moneyLost: undercharged + (balance - (purchased - sumCharged)),
      };
    } finally {
      await db.destroy();
    }
  };

  const auditSettled: GatewayCluster['auditSettled'] = async (accountId, key, outcomes, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const a = await audit(accountId, key, outcomes).catch(() => undefined);
      if (a && (a.missing.length === 0 || Date.now() > deadline)) return a;
      if (!a && Date.now() > deadline) return audit(accountId, key, outcomes);
      await sleep(250);
    }
  };

  const note = (line: string) => console.log(`[${opts.label}] ${line}`);
  const tails = (lines = 20) =>
    procs
      .map((p, i) => `--- process ${i} (pid ${p.proc.pid}, ${alive(i) ? 'alive' : 'gone'}) ---\n${p.output().split('\n').slice(-lines).join('\n')}`)
      .join('\n');

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      held.release();
      await Promise.all(
        procs.map(async (p, i) => {
          if (!alive(i)) return;
          p.proc.kill('SIGTERM');
          const timer = setTimeout(() => p.proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await p.exited;
          clearTimeout(timer);
        }),
      );
      await stopUpstreams();
      if (opts.cleanRedis) await deleteRedisKeys(opts.redisUrl, redisKeyPrefix).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  return {
    procs,
    held,
    quick,
    adminToken,
    redisKeyPrefix,
    configFile,
    base,
    alive,
    aliveIndexes,
    next,
    admin,
    createAccount,
    get,
    chat,
    load,
    kill9,
    unexpectedExits,
    waitHolding,
    audit,
    auditSettled,
    note,
    tails,
    stop,
  };
}
