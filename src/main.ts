import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { Agent } from 'undici';
import { restoreFastStringPrototype } from './fast-string-prototype.js';
import { AccountMoney } from './admission/account-money.js';
import { Admission } from './admission/admission.js';
import { DdosGuard } from './admission/ddos-guard.js';
import { FreeModelLimits } from './admission/free-limits.js';
import { AdminService } from './admin/admin-service.js';
import { AlertDetector } from './alerts/alert-detector.js';
import type { WebhookAdmin } from './alerts/alerts.js';
import { KyselyAlertCrossings } from './alerts/kysely-alert-crossings.js';
import { WebhookSender } from './alerts/webhook-sender.js';
import { KeyService } from './admin/key-service.js';
import { ManagementService } from './admin/management-service.js';
import { ReportService } from './admin/report-service.js';
import { ChatService } from './chat/chat-service.js';
import { systemClock, type Clock } from './clock.js';
import { TurnClock } from './turn-clock.js';
import type { Config } from './config/schema.js';
import type { ChangeFeed } from './events/change-feed.js';
import { MemoryChangeFeed } from './events/memory-change-feed.js';
import { RedisChangeFeed } from './events/redis-change-feed.js';
import { buildApp } from './http/app.js';
import { Inflight } from './http/inflight.js';
import { CachedAccounts } from './ledger/cached-accounts.js';
import { CachedKeys } from './ledger/cached-keys.js';
import { openDatabase, servingFrom } from './ledger/database.js';
import { startWalCheckpointer } from './ledger/wal-checkpointer.js';
import { settledWithin } from './settled-within.js';
import { KyselyLedger } from './ledger/kysely-ledger.js';
import { FileChargeJournal, postgresJournalDirOf } from './ledger/file-charge-journal.js';
import { toChargeRecord, UNWRITTEN_CHARGE } from './ledger/charge-record.js';
import type { Charge, Ledger, LedgerUpdate } from './ledger/ledger.js';
import { ledgerFromRoles } from './ledger/ledger-from-roles.js';
import { migrateToLatest } from './ledger/migrations.js';
import { MemoryCounterStore } from './limits/memory-counter-store.js';
import type { CounterStore } from './limits/counter-store.js';
import type { HoldStore } from './limits/hold-store.js';
import { MemoryHoldStore } from './limits/memory-hold-store.js';
import { RedisCounterStore } from './limits/redis-counter-store.js';
import { HOLD_STORE_COMMANDS, RedisHoldStore } from './limits/redis-hold-store.js';
import { createLogger, type Logger } from './observability/logger.js';
import { teeMetrics } from './observability/metrics.js';
import { PromMetrics } from './observability/prom-metrics.js';
import { ProviderHealth } from './observability/provider-health.js';
import { WebSearch } from './plugins/web-search.js';
import { DemoProvider } from './providers/demo/demo-provider.js';
import { OpenAiProvider } from './providers/openai/openai-provider.js';
import type { ProviderAdapter } from './providers/provider.js';
import { Catalog } from './routing/catalog.js';
import { creditsFromJson } from './ledger/money.js';
import { Cooldowns } from './routing/cooldowns.js';
import { generateAdminToken } from './security/api-key.js';
import { ByokVault } from './security/byok-vault.js';
import { SecretBox } from './security/secret-box.js';

/** How often shutdown closes keep-alive connections that went idle. */
const IDLE_SWEEP_MS = 50;
/** How long start waits for the change feed to be live before serving anyway (caches then keep entries ≤ 1 s). */
const FEED_START_WAIT_MS = 2_000;
/** How often the Redis change feed pings itself: a subscription that went silent is noticed within two. */
const FEED_HEARTBEAT_MS = 500;

export interface GatewayOptions {
  /** The gateway's time and the timers of the spec's time (deadlines, leases, windows); waits on I/O keep real time. */
  clock?: Clock;
  logger?: Logger;
  /** Listen on config.listen (true, the default) or only build the app (false, for in-process tests). */
  listen?: boolean;
  /** How long shutdown waits for running requests before it cancels (and settles) them. */
  shutdownGraceMs?: number;
}

export interface Gateway {
  app: FastifyInstance;
  config: Config;
  /** The ledger itself, without the caches: its writes are not published on the change feed (admin work goes through `admin`). */
  ledger: Ledger;
  admin: AdminService;
  /** Spend reports and lists, as the admin API answers them. */
  reports: ReportService;
  /** The alert webhooks (listed, tested); `idle()` resolves once alerts seen so far were checked and sent (tests). */
  webhooks: WebhookAdmin & { idle(): Promise<void> };
  adminToken: string;
  /** Set when the admin token was generated on this start (first start without admin_token). */
  generatedAdminToken: boolean;
  url: string | undefined;
  close(): Promise<void>;
}

/** Redis connections of this process; the URL (which may carry a password) is never logged. */
interface RedisConnections {
  /** Commands (and publishing changes). */
  client: Redis;
  /** The change feed's subscription: a connection that subscribes can send nothing else. */
  subscriber: Redis;
  close(): void;
}

function connectRedis(url: string, logger: Logger): RedisConnections {
  const client = new Redis(url, {
    // A command fails after one reconnection attempt, or after commandTimeout when Redis stops
    // answering, instead of waiting for Redis without bound.
    maxRetriesPerRequest: 1,
    commandTimeout: 2_000,
    connectTimeout: 2_000,
    // Reconnects at most a second apart, so that service resumes within a second of Redis answering.
    retryStrategy: (times) => Math.min(times * 100, 1000),
    // Commands sent in the same turn go in one write, but for the hold store's (it batches its own).
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands: [...HOLD_STORE_COMMANDS],
  });
  const subscriber = client.duplicate();
  // Without a listener ioredis prints each error itself; these are logged once per message kind and connection state.
  for (const [name, c] of [
    ['commands', client],
    ['subscriber', subscriber],
  ] as const) {
    let last = '';
    c.on('error', (err: Error) => {
      if (err.message === last) return;
      last = err.message;
      logger.warn({ connection: name, err: { message: err.message } }, 'Redis connection error (retrying)');
    });
    c.on('ready', () => (last = ''));
  }
  return {
    client,
    subscriber,
    close() {
      client.disconnect();
      subscriber.disconnect();
    },
  };
}

/** The change feed: in process without Redis, Redis pub/sub with it (waiting a moment for it to be live). */
async function startChangeFeed(config: Config, redis: RedisConnections | undefined, clock: Clock, logger: Logger): Promise<ChangeFeed> {
  if (!redis) return new MemoryChangeFeed();
  let wasLive = false;
  const feed = new RedisChangeFeed(redis.client, redis.subscriber, {
    prefix: config.redis_key_prefix,
    heartbeat: { clock, intervalMs: FEED_HEARTBEAT_MS },
    onError: (err) => logger.warn({ err }, 'change feed: a change could not be sent to the other processes (their caches drop it within seconds)'),
    onLiveChange: (live) => {
      if (live && wasLive) logger.info('change feed live again: caches were emptied, as changes may have been missed');
      else if (!live) logger.warn('change feed not live: changes made through other processes show here within 1 s (caches keep entries ≤ 1 s)');
      wasLive ||= live;
    },
  });
  feed.start();
  await settledWithin(feed.untilLive(), FEED_START_WAIT_MS);
  if (!feed.live) logger.warn('change feed not live yet (Redis does not answer): caches keep entries ≤ 1 s until it is');
  return feed;
}

function buildProviders(config: Config, clock: Clock, timers: Clock): Map<string, ProviderAdapter> {
  const providers = new Map<string, ProviderAdapter>();
  for (const p of config.providers) {
    if (p.type === 'demo') {
      providers.set(p.id, new DemoProvider({ id: p.id, tokenLatencyMs: p.token_latency_ms, clock }));
    } else {
      const timeouts = { firstByte: p.timeouts_ms.first_byte, idle: p.timeouts_ms.idle, total: p.timeouts_ms.total };
      const pool = OpenAiProvider.poolFor(p.base_url, p.connections, timeouts);
      providers.set(p.id, new OpenAiProvider({ id: p.id, baseUrl: p.base_url, timeouts, clock, timers, pool }));
    }
  }
  return providers;
}

/** The composition root: reads nothing itself, builds every concrete piece from config, starts. */
export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  // ioredis, imported above, left String.prototype slow for every string method call (fast-string-prototype.ts).
  restoreFastStringPrototype();
  // A serving gateway reads the time once a turn for all the requests of the turn (turn-clock.ts); one
  // that does not listen (a CLI verb: one change, then exit) has nothing to share a reading with, and
  // its start may be one long turn of synchronous SQLite work that a kept reading would lag behind.
  const clock = options.clock ?? (options.listen === false ? systemClock : new TurnClock());
  // What times waits on I/O (an upstream call's total limit, an answer's bounded wait for its charge):
  // real time, which a test's clock (moving the spec's time: deadlines, leases, windows) does not
  // move, as it does not move the network; on a serving gateway the turn clock's timer lists.
  const ioTimers: Clock = options.clock ? systemClock : clock;
  const logger = options.logger ?? createLogger(config.log_level);
  const db = openDatabase(config.database_url);
  await migrateToLatest(db);
  // SQLite: the WAL is checkpointed on a thread of its own, never on the event loop (wal-checkpointer.ts).
  const checkpointer = startWalCheckpointer(db, {
    onError: (err) => logger.warn({ err: err.message }, 'WAL checkpoint failed; SQLite checkpoints on the writer again if the thread stopped'),
  });
  // The ledger tells the hold store and the alerts what each commit did to money; both are built below.
  // What commits before then (the charges a start applies from the journal) waits for them: a limit
  // those charges crossed is alerted too.
  const earlyCommits: LedgerUpdate[] = [];
  let recordCommit: (updates: LedgerUpdate[]) => void = (updates) => earlyCommits.push(...updates);
  const ledger = new KyselyLedger(db, {
    onCommitted: (updates) => recordCommit(updates),
    onFlushError: (err) => logger.error({ err }, 'ledger write failed; charges kept in memory and retried'),
    onJournalProblem: (err) =>
      logger.warn(
        { err },
        'charge journal: a problem with its files (one it could not read or delete is kept, and a later start applies it, each charge once)',
      ),
    onChargeRejected: (err, charge) => {
      logger.error(
        { err, generation: charge.id, account: charge.accountId },
        'a charge could not be written (the ledger refused it repeatedly, or had closed); it was set aside',
      );
      logger.error({ charge: toChargeRecord(charge) }, UNWRITTEN_CHARGE);
    },
    durableWaitMs: config.ledger.durable_wait_ms,
    timers: ioTimers,
    maxQueuedCharges: config.ledger.max_queued_charges,
    shutdownDeadlineMs: config.ledger.shutdown_deadline_ms,
    // PostgreSQL: charges the database does not take in time are kept on disk before their answers go.
    fallbackJournal: config.database_url.startsWith('sqlite:')
      ? undefined
      : new FileChargeJournal(postgresJournalDirOf(config.ledger.journal_dir, config.database_url)),
  });

  // Charges a process made durable and did not get into the tables before it stopped (charge-journal.ts).
  // A database that does not take them now does not keep the gateway from starting: they stay there.
  await ledger.recoverJournal().then(
    (n) => n > 0 && logger.warn({ charges: n }, 'charges journaled before the last stop are being applied (each once)'),
    (err: unknown) => logger.error({ err }, 'the charge journal could not be read; its charges stay in it'),
  );
  const adminToken = config.admin_token ? { value: config.admin_token, created: false } : await ledger.settingOrCreate('admin_token', generateAdminToken);
  const secretsKey = config.secrets_key ? { value: config.secrets_key, created: false } : await ledger.settingOrCreate('secrets_key', SecretBox.generateKey);
  if (!config.secrets_key) {
    logger.warn('secrets_key is not set: BYOK provider keys are encrypted with a key kept in the database; set secrets_key to keep them apart');
  }

  if (config.admin_token && config.admin_token.length < 16) {
    logger.warn('admin_token is shorter than 16 characters: anyone who can reach the admin API can guess it');
  }

  for (const p of config.providers) {
    if (p.type === 'openai' && !p.api_key) {
      logger.warn(
        { provider: p.id },
        `provider "${p.id}" has no api_key (unset or empty): its calls carry no credentials unless the account stored its own (BYOK) key`,
      );
    }
  }

  const redis = config.redis_url ? connectRedis(config.redis_url, logger) : undefined;
  const feed = await startChangeFeed(config, redis, clock, logger);
  // Caches around the ledger's reads, kept fresh by the change feed (CONTRACT §8: admin changes reach
  // every process within 1 s). Writes go through them, so that each is published.
  const now = () => clock.now();
  // Without Redis no feed reaches the CLI's verbs (other processes on the same database): entries, and
  // the hold store's money snapshots, live 1 s, so that their changes too show within 1 s. With it, the
  // feed drops changed entries at once, and money lives in Redis, which every process writes.
  const liveTtlMs = redis ? 5_000 : 1_000;
  const keys = new CachedKeys(ledger, feed, { now, liveTtlMs });
  const accounts = new CachedAccounts(ledger, feed, { now });
  // Money is never read from these caches: admission and the views take it from the hold store.
  const cachedLedger = ledgerFromRoles({
    accounts,
    keys,
    byokSecrets: ledger,
    charges: ledger,
    generations: ledger,
    settings: ledger,
    health: ledger,
    reports: ledger,
  });

  const promMetrics = new PromMetrics();
  const health = new ProviderHealth(now);
  const metrics = teeMetrics(promMetrics, health);
  const providers = buildProviders(config, clock, ioTimers);
  const catalog = new Catalog(config);
  const vault = new ByokVault(ledger, new SecretBox(secretsKey.value), feed, { now, liveTtlMs });
  const prefix = config.redis_key_prefix;
  const onStoreError = (err: unknown) => logger.warn({ err: (err as Error).message }, 'limits store (Redis) write failed; it is retried');
  const holds: HoldStore = redis
    ? new RedisHoldStore(redis.client, { prefix, onError: onStoreError })
    : new MemoryHoldStore(clock, { snapshotTtlMs: liveTtlMs });
  const counters: CounterStore = redis ? new RedisCounterStore(redis.client, { prefix }) : new MemoryCounterStore();
  // Alerts (webhooks): checked from what each commit reports and from cooldowns; never awaited by a request.
  const alertAgent = new Agent({ keepAliveTimeout: 10_000, connect: { timeout: config.alerts.timeout_ms } });
  const sender = new WebhookSender({ webhooks: config.alerts.webhooks, dispatcher: alertAgent, clock, logger, timeoutMs: config.alerts.timeout_ms });
  const detector = new AlertDetector({
    keys,
    crossings: new KyselyAlertCrossings(db),
    send: (event) => sender.send(event),
    wanted: (type) => sender.wanted(type),
    clock,
    logger,
    balanceBelow: creditsFromJson(config.alerts.balance_below),
  });
  recordCommit = (updates) => {
    updates.forEach((u) => void holds.record(u));
    detector.committed(updates);
  };
  if (earlyCommits.length > 0) recordCommit(earlyCommits.splice(0));
  // A top-up through another process re-arms balance_low in the ledger: this process hears of it.
  feed.subscribe((event) => {
    if (event.kind === 'account') detector.accountChanged(event.id);
    else if (event.kind === 'reset') detector.forgetAll();
  });
  const money = new AccountMoney(holds, ledger, clock);
  const freeLimits = new FreeModelLimits(counters, config, clock);
  const ddos = new DdosGuard(counters, config.limits.ddos.per_ip_per_second, clock);
  const cooldowns = new Cooldowns(clock, config.routing.max_cooldown_ms, (start) => detector.cooldown(start));
  const admission = new Admission({ holds, money, clock, config });
  const searchAgent = config.plugins.web ? new Agent({ keepAliveTimeout: 30_000 }) : undefined;
  const webSearch =
    config.plugins.web && searchAgent
      ? new WebSearch({ searchUrl: config.plugins.web.search_url, maxResults: config.plugins.web.max_results, timeoutMs: 10_000, dispatcher: searchAgent })
      : undefined;
  const keyService = new KeyService(cachedLedger, clock);
  const admin = new AdminService(cachedLedger, keyService, vault, clock, config, admission, money);
  const management = new ManagementService(cachedLedger, keyService, money);
  const reports = new ReportService(cachedLedger, clock);
  const chat = new ChatService({
    config,
    catalog,
    providers,
    ledger: cachedLedger,
    vault,
    clock,
    admission,
    freeLimits,
    cooldowns,
    webSearch,
    logger,
    metrics,
  });
  const inflight = new Inflight();
  const app = buildApp({
    config,
    clock,
    logger,
    ledger: cachedLedger,
    catalog,
    chat,
    admin,
    management,
    reports,
    webhooks: sender,
    adminToken: adminToken.value,
    inflight,
    ddos,
    money,
    readiness: [
      { what: 'the ledger', reason: 'ledger_unavailable', check: () => ledger.ping() },
      ...(redis ? [{ what: 'Redis', reason: 'limits_unavailable' as const, check: () => redis.client.ping() }] : []),
    ],
    freeRequestsToday: (accountId) => freeLimits.usedToday(accountId),
    metrics,
    scrapeMetrics: () => promMetrics.scrape(),
    providerHealth: () => ({
      per_process: true,
      window_seconds: health.windowSeconds,
      data: health.snapshot(config.providers.map((p) => p.id)),
      cooldowns: cooldowns.active().map((c) => ({ provider: c.provider, model: c.model, remaining_ms: c.remainingMs, provider_code: c.code ?? null })),
    }),
  });

  let url: string | undefined;
  if (options.listen !== false) {
    // Requests may come from here on. A gateway built without listening (the CLI's verbs) serves none,
    // and its writes wait out another's lock as its start did.
    servingFrom(db);
    await app.listen({ host: config.listen.host, port: config.listen.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
    url = `http://${config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host}:${port}`;
  } else {
    await app.ready();
  }

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      // Stop accepting; let running requests finish, and past the grace cancel them (they settle).
      // Cancelled requests whose answers the ledger holds back (past its backlog bound) are let go too:
      // their charges stay queued, and ledger.close() writes them or logs them for replay.
      const grace = setTimeout(() => {
        inflight.abortAll();
        ledger.releaseAnswers();
      }, options.shutdownGraceMs ?? 10_000);
      // A keep-alive connection goes idle when its last response is sent; the server's close() only
      // closes those idle at the start, so the others would keep it open for the keep-alive timeout
      // (72 s). Close them as they go idle: shutdown then ends when the last request settles.
      const idleSweep = options.listen === false ? undefined : setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
      let unwritten: Charge[];
      // A server that failed to close (a hook that threw) still has its running requests to finish,
      // within the grace: the ledger must not close under them. The failure is thrown at the end.
      let closeFailure: unknown;
      try {
        await app.close().catch((err: unknown) => (closeFailure = err ?? new Error('the server failed to close')));
        await inflight.idle();
      } finally {
        clearTimeout(grace);
        clearInterval(idleSweep);
        // Crossings seen so far are claimed while the ledger is open; what is due goes out (bounded).
        await settledWithin(detector.idle(), 2_000, { unref: true });
        unwritten = await ledger.close();
        await checkpointer?.close();
        await sender.close();
        await alertAgent.close();
        await holds.close();
        ddos.close();
        await counters.close();
        await searchAgent?.close();
        keys.close();
        accounts.close();
        vault.close();
        await feed.close();
        redis?.close();
        await Promise.all([...providers.values()].map((p) => p.close().catch(() => undefined)));
      }
      // Charges the ledger could not take before the deadline: one line each, in full, to replay.
      for (const charge of unwritten) logger.error({ charge: toChargeRecord(charge) }, UNWRITTEN_CHARGE);
      if (unwritten.length > 0) {
        throw new Error(
          `${unwritten.length} charge(s) could not be written to the ledger within ledger.shutdown_deadline_ms; each is logged as an "${UNWRITTEN_CHARGE}" line: replay them with \`tollgate ledger replay LOGFILE\``,
        );
      }
      if (closeFailure !== undefined) throw closeFailure;
    })();
    return closing;
  };

  const webhooks = {
    list: () => sender.list(),
    test: (id: string) => sender.test(id),
    idle: async () => {
      // Alerts follow the ledger's commits to its tables: the charges made durable so far go there first.
      await ledger.flush().catch(() => undefined);
      await detector.idle();
      await sender.idle();
    },
  };
  return { app, config, ledger, admin, reports, webhooks, adminToken: adminToken.value, generatedAdminToken: adminToken.created, url, close };
}
