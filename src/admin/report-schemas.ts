import { z } from 'zod';
import type { GenerationStatus, SpendDimension } from '../ledger/ledger.js';
import { accountCoreSchema } from './answer-schemas.js';

/**
 * The queries and answers of the reports (admin: accounts, generations, spend; management: activity),
 * read by ReportService and documented in the OpenAPI document from these same schemas.
 */

const wholeNumber = (max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number, 0 or more')
    .transform(Number)
    .refine((n) => n <= max, `must be at most ${max}`);
const pageSize = (max: number) => wholeNumber(max).refine((n) => n >= 1, 'must be at least 1');

/** Whether `date` (YYYY-MM-DD) is a day of the calendar: 2026-02-30 is not (Date.parse reads it as March 2). */
export function isCalendarDate(date: string): boolean {
  const ms = Date.parse(`${date}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === date;
}

/** A time in a query: ISO 8601 (a date, or a date-time with its offset) or epoch milliseconds. */
const time = z
  .string()
  .meta({ description: 'An ISO 8601 date (2026-01-31) or date-time with offset (2026-01-31T12:00:00Z), or epoch milliseconds' })
  .transform((v, ctx) => {
    // A day that does not exist (2026-11-31) is refused, not read as the next one.
    const iso = /^\d{4}-\d{2}-\d{2}(T.*(Z|[+-]\d{2}:\d{2}))?$/.test(v) && isCalendarDate(v.slice(0, 10));
    const ms = /^\d{1,15}$/.test(v) ? Number(v) : iso ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date (2026-01-31) or date-time with offset (2026-01-31T12:00:00Z), or epoch milliseconds' });
      return z.NEVER;
    }
    return ms;
  })
  .optional();

export const accountsQuery = z.strictObject({
  search: z.string().max(200, 'must be at most 200 characters').optional().meta({ description: 'Only accounts whose name contains this (case-insensitive)' }),
  offset: wholeNumber(1e9).optional(),
  limit: pageSize(200).optional().meta({ description: 'At most this many (default 50)' }),
});

const statuses = ['completed', 'cancelled', 'error'] as const satisfies readonly GenerationStatus[];
export const generationsQuery = z.strictObject({
  key: z.string().min(1).optional().meta({ description: "Only this key's (its hash)" }),
  model: z.string().min(1).optional(),
  status: z.enum(statuses, { error: `must be one of ${statuses.join(', ')}` }).optional(),
  from: time,
  to: time,
  offset: wholeNumber(1e9).optional(),
  limit: pageSize(500).optional().meta({ description: 'At most this many (default 50)' }),
});

const dimensions = ['account', 'key', 'model', 'provider'] as const satisfies readonly SpendDimension[];
export const spendQuery = z.strictObject({
  from: time,
  to: time,
  bucket: z.enum(['hour', 'day'], { error: 'must be hour or day' }).optional(),
  by: z
    .string()
    .meta({ description: 'Comma-separated: account, key, model, provider (default model)' })
    .transform((v) => (v === '' ? [] : v.split(',').map((d) => d.trim())))
    .pipe(z.array(z.enum(dimensions, { error: `each must be one of ${dimensions.join(', ')}` })))
    .optional(),
  account: z.string().min(1).optional(),
  key: z.string().min(1).optional(),
});

export const activityQuery = z.object({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a UTC date, YYYY-MM-DD')
    .optional()
    .meta({ description: 'One UTC day within the last 30 (default: all 30)' }),
  api_key_hash: z.string().min(1).optional().meta({ description: "Only this key's activity" }),
  // The SDK's other parameters mean nothing here (one workspace an account).
  user_id: z.string().optional(),
  group_by: z.string().optional(),
  workspace_id: z.string().optional(),
});

/** GET /api/v1/generations: the calling key's latest (a management key's: its account's, or one key's). */
export const keyGenerationsQuery = z.strictObject({
  limit: pageSize(100).optional().meta({ description: 'At most this many (default 20)' }),
  key: z.string().min(1).optional().meta({ description: "A management key only: this key's" }),
});
/** GET /api/v1/key/activity takes no parameters. */
export const keyActivityQuery = z.strictObject({});

const credits = z.number();

export const accountPageSchema = z.object({ data: z.array(accountCoreSchema), total: z.int(), offset: z.int(), limit: z.int() }).meta({ id: 'AccountPage' });
export type AccountPage = z.output<typeof accountPageSchema>;

export const generationAdminSchema = z
  .object({
    id: z.string(),
    key_hash: z.string(),
    model: z.string(),
    provider: z.string(),
    status: z.enum(statuses),
    finish_reason: z.string().nullable(),
    tokens_prompt: z.int(),
    tokens_completion: z.int(),
    total_cost: credits,
    byok_usage: credits,
    is_byok: z.boolean(),
    streamed: z.boolean(),
    cancelled: z.boolean(),
    usage_source: z.enum(['upstream', 'counted']).nullable(),
    latency_ms: z.int(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'AdminGeneration' });
export const generationPageSchema = z.object({ data: z.array(generationAdminSchema), offset: z.int(), limit: z.int() }).meta({ id: 'GenerationPage' });
export type GenerationPage = z.output<typeof generationPageSchema>;

export const spendRowSchema = z
  .object({
    start: z.iso.datetime().meta({ description: 'Start of the hour or UTC day' }),
    account: z.string().optional(),
    key: z.string().optional(),
    model: z.string().optional(),
    provider: z.string().optional(),
    requests: z.int(),
    cost: credits,
    byok_usage: credits,
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
  })
  .meta({ id: 'SpendRow' });
export const spendReportSchema = z
  .object({ data: z.array(spendRowSchema), from: z.iso.datetime(), to: z.iso.datetime(), bucket: z.enum(['hour', 'day']), by: z.array(z.enum(dimensions)) })
  .meta({ id: 'SpendReport' });
export type SpendReport = z.output<typeof spendReportSchema>;

/** The SDK's ActivityItem (CONTRACT §9). */
export const activityItemSchema = z
  .object({
    date: z.string(),
    model: z.string(),
    model_permaslug: z.string(),
    endpoint_id: z.string(),
    provider_name: z.string(),
    usage: credits,
    byok_usage_inference: credits,
    requests: z.int(),
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
    reasoning_tokens: z.int(),
  })
  .meta({ id: 'ActivityItem' });
export const activityAnswerSchema = z.object({ data: z.array(activityItemSchema) }).meta({ id: 'Activity' });
export type ActivityAnswer = z.output<typeof activityAnswerSchema>;
