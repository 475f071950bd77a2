import type { WebhookAdmin } from '../alerts/alerts.js';
import type { AdminService } from '../admin/admin-service.js';
import type { ManagementService } from '../admin/management-service.js';
import type { ReportService } from '../admin/report-service.js';
import type { AccountMoney } from '../admission/account-money.js';
import type { DdosGuard } from '../admission/ddos-guard.js';
import type { ChatService } from '../chat/chat-service.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Accounts, Generations, Keys, LedgerHealth } from '../ledger/ledger.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ProviderHealthRow } from '../observability/provider-health.js';
import type { Catalog } from '../routing/catalog.js';
import type { Inflight } from './inflight.js';

export interface ProviderHealthView {
  /** Always true: each process keeps its own. */
  per_process: true;
  window_seconds: number;
  data: ProviderHealthRow[];
  cooldowns: Array<{ provider: string; model: string; remaining_ms: number; provider_code: string | null }>;
}

/** What the HTTP layer is handed by main.ts; it builds none of it. */
export interface AppDeps {
  config: Config;
  clock: Clock;
  logger: Logger;
  /** Reads for authentication, the key and credit views, generations and readiness. */
  ledger: Keys & Accounts & Generations & LedgerHealth;
  catalog: Catalog;
  chat: ChatService;
  admin: AdminService;
  /** The self-service management API's work (CONTRACT §9). */
  management: ManagementService;
  /** Spend reports and activity, read from the ledger's rollups. */
  reports: ReportService;
  /** The alert webhooks: listed, and tested with a test event (admin API). */
  webhooks: WebhookAdmin;
  adminToken: string;
  inflight: Inflight;
  ddos: DdosGuard;
  /** What must answer for the gateway to be ready (CONTRACT §8): the ledger, and Redis when configured. */
  readiness: ReadonlyArray<{ what: string; reason: 'ledger_unavailable' | 'limits_unavailable'; check(): Promise<unknown> }>;
  /** Accounts' money as every process sees it (the limits store's view). */
  money: AccountMoney;
  metrics: Metrics;
  /** The metrics in Prometheus' text format (GET /metrics). */
  scrapeMetrics(): Promise<{ text: string; contentType: string }>;
  /** Providers' recent health as this process saw it (GET /api/v1/admin/providers). */
  providerHealth(): ProviderHealthView;
  /** Where the built dashboard is (default: web/dist of the checkout). */
  dashboardDir?: string;
  /** Free-model requests the account made today (UTC), as the free-model limiter counts them. */
  freeRequestsToday(accountId: string): Promise<number>;
}
