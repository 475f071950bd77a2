import type { Clock } from '../clock.js';
import { invalidRequest, notFound } from '../errors.js';
import type { Accounts, Generation, KeyRecord, Reports, SpendDimension, SpendRow } from '../ledger/ledger.js';
import { creditsToJson } from '../ledger/money.js';
import { parseInput } from './parse-input.js';
import {
  accountsQuery,
  activityQuery,
  isCalendarDate,
  generationsQuery,
  keyActivityQuery,
  keyGenerationsQuery,
  spendQuery,
  type AccountPage,
  type ActivityAnswer,
  type GenerationPage,
  type SpendReport,
} from './report-schemas.js';
import { accountView, generationAdminView } from './views.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** The longest range a report covers: hourly rows for 31 days, daily rows for 400. */
const MAX_RANGE_MS = { hour: 31 * DAY_MS, day: 400 * DAY_MS } as const;
/** Activity (CONTRACT §9) covers the last 30 UTC days, today included. */
const ACTIVITY_DAYS = 30;

const floorTo = (ms: number, width: number) => Math.floor(ms / width) * width;
const ceilTo = (ms: number, width: number) => Math.ceil(ms / width) * width;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function spendRowView(r: SpendRow) {
  return {
    start: new Date(r.start).toISOString(),
    ...r.group,
    requests: r.requests,
    cost: creditsToJson(r.cost),
    byok_usage: creditsToJson(r.byokUsage),
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
  };
}

/**
 * Reports for the operator (accounts, generations, spend) and account owners' activity (CONTRACT
 * §9), read from the ledger's rollups: a report never scans every generation.
 */
export class ReportService {
  constructor(
    private readonly ledger: Reports & Pick<Accounts, 'getAccount'>,
    private readonly clock: Clock,
  ) {}

  /** GET /api/v1/admin/accounts?search=&offset=&limit=: accounts, oldest first, a page at a time. */
  async accounts(query: unknown): Promise<AccountPage> {
    const q = parseInput(accountsQuery, query);
    const offset = q.offset ?? 0;
    const limit = q.limit ?? 50;
    const { accounts, total } = await this.ledger.listAccounts({ ...(q.search ? { search: q.search } : {}), offset, limit });
    return { data: accounts.map(accountView), total, offset, limit };
  }

  /** GET /api/v1/admin/accounts/:id/generations: an account's generations, newest first, filtered, a page at a time. */
  async generations(accountId: string, query: unknown): Promise<GenerationPage> {
    const q = parseInput(generationsQuery, query);
    if (!(await this.ledger.getAccount(accountId))) throw notFound(`no account with id "${accountId}"`);
    const offset = q.offset ?? 0;
    const limit = q.limit ?? 50;
    const rows = await this.ledger.listGenerations({
      accountId,
      offset,
      limit,
      ...(q.key ? { keyHash: q.key } : {}),
      ...(q.model ? { model: q.model } : {}),
      ...(q.status ? { status: q.status } : {}),
      ...(q.from !== undefined ? { from: q.from } : {}),
      ...(q.to !== undefined ? { to: q.to } : {}),
    });
    return { data: rows.map(generationAdminView), offset, limit };
  }

  /**
   * GET /api/v1/admin/reports/spend?from=&to=&bucket=&by=&account=&key=: spend, requests and tokens
   * per hour or UTC day and per account, key, model or provider (any of them, comma-separated).
   * Defaults: the last 30 days by day and model. The range is widened to whole hours or days.
   */
  async spend(query: unknown): Promise<SpendReport> {
    const q = parseInput(spendQuery, query);
    const bucket = q.bucket ?? 'day';
    const width = bucket === 'day' ? DAY_MS : HOUR_MS;
    const now = this.clock.now();
    const to = ceilTo(q.to ?? now + 1, width);
    const from = floorTo(q.from ?? to - ACTIVITY_DAYS * DAY_MS, width);
    if (from >= to) throw invalidRequest('from: must be before to', { field: 'from' });
    if (to - from > MAX_RANGE_MS[bucket]) {
      throw invalidRequest(`to: a report by ${bucket} covers at most ${MAX_RANGE_MS[bucket] / DAY_MS} days`, { field: 'to' });
    }
    const by: SpendDimension[] = [...new Set(q.by ?? (['model'] as const))];
    const rows = await this.ledger.spend({
      from,
      to,
      bucket,
      by,
      ...(q.account ? { accountId: q.account } : {}),
      ...(q.key ? { keyHash: q.key } : {}),
    });
    return { data: rows.map(spendRowView), from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket, by };
  }

  /**
   * GET /api/v1/generations?limit=&key=: the latest generations, newest first (default 20, at most
   * 100): an inference key's own; for a management key, its account's (`key`: one key's only).
   */
  async keyGenerations(caller: KeyRecord, query: unknown): Promise<Generation[]> {
    const q = parseInput(keyGenerationsQuery, query);
    if (q.key !== undefined && !caller.management) throw invalidRequest('key: only a management key may name a key; an API key sees its own', { field: 'key' });
    const keyHash = caller.management ? q.key : caller.hash;
    return this.ledger.listGenerations({ accountId: caller.accountId, offset: 0, limit: q.limit ?? 20, ...(keyHash ? { keyHash } : {}) });
  }

  /** The UTC days activity covers: the last ACTIVITY_DAYS, today included (their starts, epoch ms). */
  private recentDays(): { first: number; today: number } {
    const today = floorTo(this.clock.now(), DAY_MS);
    return { first: today - (ACTIVITY_DAYS - 1) * DAY_MS, today };
  }

  /**
   * GET /api/v1/key/activity: the calling key's spend per UTC day and model over the last 30 days
   * (today included), oldest first, read from the rollups; a management key's: its account's.
   */
  async keyActivity(key: KeyRecord, query: unknown) {
    parseInput(keyActivityQuery, query);
    const { first: from, today } = this.recentDays();
    const to = today + DAY_MS;
    // A management key spends nothing itself: it sees its account's spend.
    const rows = await this.ledger.spend({
      from,
      to,
      bucket: 'day',
      by: ['model'],
      accountId: key.accountId,
      ...(key.management ? {} : { keyHash: key.hash }),
    });
    return {
      data: rows.map((r) => ({
        date: isoDay(r.start),
        model: r.group.model ?? '',
        requests: r.requests,
        usage: creditsToJson(r.cost),
        byok_usage: creditsToJson(r.byokUsage),
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
      })),
      from: isoDay(from),
      to: isoDay(today),
    };
  }

  /**
   * GET /api/v1/activity?date=&api_key_hash= for a management key (CONTRACT §9): its account's spend
   * per UTC day, model and provider over the last 30 days, in the SDK's ActivityItem shape.
   */
  async activity(owner: KeyRecord, query: unknown): Promise<ActivityAnswer> {
    const q = parseInput(activityQuery, query);
    const { first, today } = this.recentDays();
    let from = first;
    let to = today + DAY_MS;
    if (q.date) {
      const day = isCalendarDate(q.date) ? Date.parse(`${q.date}T00:00:00Z`) : NaN;
      if (Number.isNaN(day) || day < first || day > today) {
        throw invalidRequest('date: must be a UTC date within the last 30 days', { field: 'date' });
      }
      from = day;
      to = day + DAY_MS;
    }
    const rows = await this.ledger.spend({
      from,
      to,
      bucket: 'day',
      by: ['model', 'provider'],
      accountId: owner.accountId,
      ...(q.api_key_hash ? { keyHash: q.api_key_hash } : {}),
    });
    return {
      data: rows.map((r) => ({
        date: isoDay(r.start),
        model: r.group.model ?? '',
        model_permaslug: r.group.model ?? '',
        endpoint_id: `${r.group.provider ?? ''}/${r.group.model ?? ''}`,
        provider_name: r.group.provider ?? '',
        usage: creditsToJson(r.cost),
        byok_usage_inference: creditsToJson(r.byokUsage),
        requests: r.requests,
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        reasoning_tokens: 0,
      })),
    };
  }
}
