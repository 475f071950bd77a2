import type { FastifyInstance } from 'fastify';
import { Agent } from 'undici';
import { Admission } from './admission/admission.js';
import { DdosGuard } from './admission/ddos-guard.js';
import { FreeModelLimits } from './admission/free-limits.js';
import { AdminService } from './admin/admin-service.js';
import { ChatService } from './chat/chat-service.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { buildApp } from './http/app.js';
import { Inflight } from './http/inflight.js';
import { openDatabase } from './ledger/database.js';
import { KyselyLedger } from './ledger/kysely-ledger.js';
import { toChargeRecord, UNWRITTEN_CHARGE } from './ledger/charge-record.js';
import type { Charge, Ledger } from './ledger/ledger.js';
import { migrateToLatest } from './ledger/migrations.js';
import { MemoryCounterStore } from './limits/memory-counter-store.js';
import { MemoryHoldStore } from './limits/memory-hold-store.js';
import { createLogger, type Logger } from './observability/logger.js';
import { WebSearch } from './plugins/web-search.js';
import { DemoProvider } from './providers/demo/demo-provider.js';
import { OpenAiProvider } from './providers/openai/openai-provider.js';
import type { ProviderAdapter } from './providers/provider.js';
import { Catalog } from './routing/catalog.js';
import { Cooldowns } from './routing/cooldowns.js';
import { generateAdminToken } from './security/api-key.js';
import { ByokVault } from './security/byok-vault.js';
import { SecretBox } from './security/secret-box.js';

/** How often shutdown closes keep-alive connections that went idle. */
const IDLE_SWEEP_MS = 50;

export interface GatewayOptions {
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
  ledger: Ledger;
  admin: AdminService;
  adminToken: string;
  /** Set when the admin token was generated on this start (first start without admin_token). */
  generatedAdminToken: boolean;
  url: string | undefined;
  close(): Promise<void>;
}

function buildProviders(config: Config, clock: Clock): Map<string, ProviderAdapter> {
  const providers = new Map<string, ProviderAdapter>();
  for (const p of config.providers) {
    if (p.type === 'demo') {
      providers.set(p.id, new DemoProvider({ id: p.id, tokenLatencyMs: p.token_latency_ms, clock }));
    } else {
      const timeouts = { firstByte: p.timeouts_ms.first_byte, idle: p.timeouts_ms.idle, total: p.timeouts_ms.total };
      const pool = OpenAiProvider.poolFor(p.base_url, p.connections, timeouts);
      providers.set(p.id, new OpenAiProvider({ id: p.id, baseUrl: p.base_url, timeouts, clock, pool }));
    }
  }
  return providers;
}

/** The composition root: reads nothing itself, builds every concrete piece from config, starts. */
export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.log_level);
  const db = openDatabase(config.database_url);
  await migrateToLatest(db);
  const ledger = new KyselyLedger(db, {
    onFlushError: (err) => logger.error({ err }, 'ledger write failed; charges kept in memory and retried'),
    onChargeRejected: (err, charge) => {
      logger.error({ err, generation: charge.id, account: charge.accountId }, 'the ledger refused one charge repeatedly; it was set aside');
      logger.error({ charge: toChargeRecord(charge) }, UNWRITTEN_CHARGE);
    },
    durableWaitMs: config.ledger.durable_wait_ms,
    maxQueuedCharges: config.ledger.max_queued_charges,
    shutdownDeadlineMs: config.ledger.shutdown_deadline_ms,
  });

  const adminToken = config.admin_token ? { value: config.admin_token, created: false } : await ledger.settingOrCreate('admin_token', generateAdminToken);
  const secretsKey = config.secrets_key ? { value: config.secrets_key, created: false } : await ledger.settingOrCreate('secrets_key', SecretBox.generateKey);
  if (!config.secrets_key) {
    logger.warn('secrets_key is not set: BYOK provider keys are encrypted with a key kept in the database; set secrets_key to keep them apart');
  }

  if (config.admin_token && config.admin_token.length < 16) {
    logger.warn('admin_token is shorter than 16 characters: anyone who can reach the admin API can guess it');
  }
  if (config.redis_url) {
    logger.warn(
      'redis_url is set, but this version keeps limits (in-flight holds, rate-limit counters) in process: run a single instance, or several instances will each enforce their own limits',
    );
  }

  for (const p of config.providers) {
    if (p.type === 'openai' && !p.api_key) {
      logger.warn(
        { provider: p.id },
        `provider "${p.id}" has no api_key (unset or empty): its calls carry no credentials unless the account stored its own (BYOK) key`,
      );
    }
  }

  const providers = buildProviders(config, clock);
  const catalog = new Catalog(config);
  const vault = new ByokVault(ledger, new SecretBox(secretsKey.value), () => clock.now());
  const holds = new MemoryHoldStore();
  const counters = new MemoryCounterStore();
  const freeLimits = new FreeModelLimits(counters, config, clock);
  const ddos = new DdosGuard(counters, config.limits.ddos.per_ip_per_second, clock);
  const cooldowns = new Cooldowns(clock, config.routing.max_cooldown_ms);
  const admission = new Admission({ holds, ledger, clock, config });
  const searchAgent = config.plugins.web ? new Agent({ keepAliveTimeout: 30_000 }) : undefined;
  const webSearch =
    config.plugins.web && searchAgent
      ? new WebSearch({ searchUrl: config.plugins.web.search_url, maxResults: config.plugins.web.max_results, timeoutMs: 10_000, dispatcher: searchAgent })
      : undefined;
  const admin = new AdminService(ledger, vault, clock, config, admission);
  const chat = new ChatService({ config, catalog, providers, ledger, vault, clock, admission, freeLimits, cooldowns, webSearch, logger });
  const inflight = new Inflight();
  const app = buildApp({
    config,
    clock,
    logger,
    ledger,
    catalog,
    chat,
    admin,
    adminToken: adminToken.value,
    inflight,
    ddos,
    freeRequestsToday: (accountId) => freeLimits.usedToday(accountId),
  });

  let url: string | undefined;
  if (options.listen !== false) {
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
      const grace = setTimeout(() => inflight.abortAll(), options.shutdownGraceMs ?? 10_000);
      // A keep-alive connection goes idle when its last response is sent; the server's close() only
      // closes those idle at the start, so the others would keep it open for the keep-alive timeout
      // (72 s). Close them as they go idle: shutdown then ends when the last request settles.
      const idleSweep = options.listen === false ? undefined : setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
      let unwritten: Charge[];
      try {
        await app.close();
        await inflight.idle();
      } finally {
        clearTimeout(grace);
        clearInterval(idleSweep);
        unwritten = await ledger.close();
        await holds.close();
        await counters.close();
        await searchAgent?.close();
        await Promise.all([...providers.values()].map((p) => p.close().catch(() => undefined)));
      }
      // Charges the ledger could not take before the deadline: one line each, in full, to replay.
      for (const charge of unwritten) logger.error({ charge: toChargeRecord(charge) }, UNWRITTEN_CHARGE);
      if (unwritten.length > 0) {
        throw new Error(
          `${unwritten.length} charge(s) could not be written to the ledger within ledger.shutdown_deadline_ms; each is logged as an "${UNWRITTEN_CHARGE}" line: replay them with \`tollgate ledger replay LOGFILE\``,
        );
      }
    })();
    return closing;
  };

  return { app, config, ledger, admin, adminToken: adminToken.value, generatedAdminToken: adminToken.created, url, close };
}
