import { z } from 'zod';
import { decimalsOf, decimalText } from './decimal-text.js';

/** An amount of credits in the config: credits are counted in nanocredits, so at most 9 decimals. */
const credits = z
  .number()
  .nonnegative()
  .refine((v) => decimalsOf(v) <= 9, 'must have at most 9 decimals (credits are counted in nanocredits)');

/** A decimal price in credits per unit, as OpenRouter lists them ("0.000001"); a YAML number is taken in its plain digits. */
const price = z
  .union([z.string(), z.number()])
  .transform((v) => (typeof v === 'number' ? decimalText(v) : v))
  .refine((v) => /^\d+(\.\d{1,15})?$/.test(v), {
    message: 'must be a non-negative decimal with at most 15 decimals, e.g. "0.000001"',
  });

const optionalString = z.string().min(1).optional();

const listen = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    // A port often comes from the environment (`port: ${PORT}`), as text: whole digits are taken as the number.
    port: z.preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number().int().min(0).max(65535)).default(8080),
    trust_proxy: z.boolean().default(false),
    body_limit_mb: z.number().positive().max(1024).default(10),
    /**
     * Origins whose browser apps may call the API (CORS): exact origins such as
     * "https://app.example.com", or "*" for any. Empty (the default): no CORS headers at all.
     */
    cors_origins: z
      .array(z.string().regex(/^(\*|https?:\/\/[^/\s]+)$/, 'must be "*" or an origin such as "https://app.example.com" (scheme and host, no path)'))
      .default([]),
  })
  .strict();

const newerAccounts = z
  .object({
    only: z.boolean().default(false),
    max_age_days: z.number().nonnegative().default(30),
    min_spend: credits.default(5),
  })
  .strict();

/**
 * Tokens an upstream may bill inside `prompt_tokens` for each non-text part of a prompt, for the
 * estimate only (CONTRACT §7: "a per-model token figure for each image, audio or file part").
 * The defaults are chosen so that the estimate does not undercount what such a part is billed:
 * - image 48,169: the largest per-image figure of a common provider: OpenAI's gpt-4o-mini bills a
 *   high-detail image 2,833 + 5,667 per 512 px tile, up to 8 tiles (gpt-4o: 85 + 170 per tile, at
 *   most 1,445; the patch models up to ~3,800; Anthropic ~1,600; Gemini 258 per 768 px tile).
 * - audio_per_kb 32, per 1,000 bytes of an `input_audio` part's base64 data: Gemini bills 32 tokens a
 *   second (OpenAI about 10), and one second of speech takes at least 750 bytes (6 kbit/s, the lowest
 *   bitrate of a speech codec; mp3 goes no lower than 8 kbit/s), that is 1,000 bytes of base64.
 * - file_per_kb 3,000, per 1,000 bytes of a `file` part's inline `file_data`: 4 tokens per byte of the
 *   file. A text file is at most 1 token a byte; a PDF page is billed as its text plus a page image
 *   (OpenAI: up to 1,445 image tokens; Anthropic: 1,500–3,000 text tokens and an image) and a
 *   compressed page can take under 1 KB.
 * - by_reference null: a file or audio part whose data is not inline (`file_id`, a URL) has no size
 *   to go by; null means the model's `context_length`, the most a prompt can hold.
 * Whatever the figures, all parts of one request together count at most the model's `context_length`.
 */
const partTokensShape = {
  image: z.number().int().nonnegative(),
  audio_per_kb: z.number().nonnegative(),
  file_per_kb: z.number().nonnegative(),
  by_reference: z.number().int().nonnegative().nullable(),
};
const partTokens = z
  .object({
    image: partTokensShape.image.default(48_169),
    audio_per_kb: partTokensShape.audio_per_kb.default(32),
    file_per_kb: partTokensShape.file_per_kb.default(3000),
    by_reference: partTokensShape.by_reference.default(null),
  })
  .strict();
/** A model's own figures, each falling back to `limits.in_flight.part_tokens`. */
const modelPartTokens = z.object(partTokensShape).partial().strict();

const inFlight = z
  .object({
    fraction: z.number().min(0).max(1).default(0.5),
    ceiling: credits.default(50),
    balance_threshold: credits.default(100),
    newer_accounts: newerAccounts.default({ only: false, max_age_days: 30, min_spend: 5 }),
    settlement_window_ms: z.number().int().nonnegative().default(60000),
    default_max_tokens: z.number().int().positive().default(4096),
    part_tokens: partTokens.default(partTokens.parse({})),
  })
  .strict();

const freeModels = z
  .object({
    suffix: z.string().min(1).default(':free'),
    per_minute: z.number().int().nonnegative().default(20),
    per_day_low: z.number().int().nonnegative().default(50),
    per_day_high: z.number().int().nonnegative().default(1000),
    tier_threshold: credits.default(10),
    free_tier_threshold: credits.default(10),
  })
  .strict();

const limits = z
  .object({
    in_flight: inFlight.default(inFlight.parse({})),
    free_models: freeModels.default(freeModels.parse({})),
    ddos: z
      .object({ per_ip_per_second: z.number().int().positive().default(1000) })
      .strict()
      .default({ per_ip_per_second: 1000 }),
    byok_fee: z.number().min(0).max(1).default(0.05),
    /**
     * How long one request may run, fallbacks, stalls and keep-alive comments included: at the deadline
     * it is cancelled and settles (charged for what was delivered), and its holds end. Unset: 15 minutes,
     * or a minute more than the longest provider `timeouts_ms.total` when that is longer.
     */
    request_deadline_ms: z.number().int().positive().optional(),
    /**
     * How long a running request's holds (and an ended one's pending charge) count without being
     * renewed: the process that runs it renews them; a process that dies leaves nothing counting
     * past this (CONTRACT §8: 30 s).
     */
    hold_lease_ms: z.number().int().min(1000).max(30_000).default(30_000),
  })
  .strict();

const routing = z
  .object({
    /** The longest an endpoint is skipped for one credential after a 429 with a retry hint. */
    max_cooldown_ms: z.number().int().positive().max(86_400_000).default(60_000),
  })
  .strict();

/** The request deadline when config sets none: above every provider's total timeout. */
function defaultRequestDeadlineMs(providers: ReadonlyArray<{ type: string; timeouts_ms?: { total: number } }>): number {
  const longest = Math.max(0, ...providers.map((p) => p.timeouts_ms?.total ?? 0));
  return Math.max(900_000, longest + 60_000);
}

const timeouts = z
  .object({
    first_byte: z.number().int().positive().default(30000),
    idle: z.number().int().positive().default(30000),
    total: z.number().int().positive().default(600000),
  })
  .strict();

const openaiProvider = z
  .object({
    id: z.string().min(1),
    type: z.literal('openai'),
    base_url: z.url({ protocol: /^https?$/ }),
    /** Empty counts as unset (warned about at start: only BYOK requests carry a key then). */
    api_key: z
      .string()
      .optional()
      .transform((v) => v || undefined),
    timeouts_ms: timeouts.default(timeouts.parse({})),
    connections: z.number().int().positive().default(128),
  })
  .strict();

const demoProvider = z
  .object({
    id: z.string().min(1),
    type: z.literal('demo'),
    /** Delay between streamed tokens. */
    token_latency_ms: z.number().int().nonnegative().default(15),
  })
  .strict();

const provider = z.discriminatedUnion('type', [openaiProvider, demoProvider]);

const pricing = z
  .object({
    prompt: price.default('0'),
    completion: price.default('0'),
    request: price.default('0'),
    image: price.default('0'),
  })
  .strict();

const endpoint = z
  .object({
    provider: z.string().min(1),
    model: z.string().min(1),
    pricing: pricing.default(pricing.parse({})),
    free_limits_exempt: z.boolean().default(false),
  })
  .strict();

const model = z
  .object({
    id: z.string().min(1),
    name: optionalString,
    description: z.string().default(''),
    context_length: z.number().int().positive().default(8192),
    per_minute: z.number().int().nonnegative().optional(),
    capacity_per_minute: z.number().int().positive().nullish(),
    part_tokens: modelPartTokens.optional(),
    endpoints: z.array(endpoint).min(1),
  })
  .strict();

const webPlugin = z
  .object({
    search_url: z.url({ protocol: /^https?$/ }),
    price: price.default('0'),
    max_results: z.number().int().positive().max(50).default(5),
  })
  .strict();

/** How charges reach the ledger (see docs/charging.md). */
const ledger = z
  .object({
    /** How long a finished answer waits for its charge to be durable before it is sent anyway (the charge stays queued). */
    durable_wait_ms: z.number().int().positive().default(3000),
    /** How long shutdown keeps trying to write queued charges before it logs them and exits non-zero. */
    shutdown_deadline_ms: z.number().int().positive().default(30000),
    /** Charges waiting to be written past which answers wait for their own charge, however long (backpressure). */
    max_queued_charges: z.number().int().positive().default(10000),
    /**
     * PostgreSQL: the directory (relative to the working directory, or absolute) where charges the
     * database did not take within durable_wait_ms are kept on disk before their answers go, one
     * subdirectory a database; the next start applies what a stopped process left there. SQLite's
     * journal sits beside its database file.
     */
    journal_dir: z.string().min(1).default('tollgate-charges'),
  })
  .strict();

/** The events a webhook can ask for (alerts before the hard stop); `test` is sent only by the admin API's test action. */
export const alertEventTypes = ['key_limit_80', 'key_limit_100', 'balance_low', 'provider_cooldown'] as const;

const webhook = z
  .object({
    /** How the admin API and the dashboard name it; default `webhook-N` (its place in the list, from 1). */
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, "_", "." or "-"')
      .optional(),
    url: z.url({ protocol: /^https?$/ }),
    /** Signs each delivery (X-Tollgate-Signature); never logged or returned. */
    secret: z.string().min(16, 'must be at least 16 characters'),
    events: z
      .array(z.enum(alertEventTypes))
      .min(1)
      .default([...alertEventTypes]),
  })
  .strict();

/** Webhooks called when a key nears or reaches its limit, a balance runs low, or a provider cools down. */
const alerts = z
  .object({
    webhooks: z.array(webhook).default([]),
    /** balance_low is sent when an account's balance falls below this many credits. */
    balance_below: credits.max(1_000_000_000).default(1),
    /** How long one delivery attempt may take before it counts as failed (and is retried). */
    timeout_ms: z.number().int().positive().max(60_000).default(5000),
  })
  .strict();

/**
 * A token a client presents as `Authorization: Bearer <token>`: read without the blanks around it (a
 * secret read from a file or a mounted secret usually ends in a newline, which no header can carry, and
 * the token would match nothing), and refused at start when it holds anything else a header cannot carry.
 */
const bearerToken = z
  .string()
  .trim()
  .regex(/^[\x21-\x7e]*$/, 'must be printable ASCII with no blanks inside (it is sent in the Authorization header)');

export const configSchema = z
  .object({
    listen: listen.default(listen.parse({})),
    database_url: z
      .string()
      .regex(/^(sqlite:|postgres(ql)?:\/\/)/, 'must start with sqlite: or postgres://')
      .default('sqlite:./data/tollgate.db'),
    redis_url: z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
    /**
     * Prepended to every key and channel the gateway uses in Redis, so that several deployments (or
     * tests) can share one Redis. Every process of one deployment must use the same prefix.
     */
    redis_key_prefix: z.string().min(1).max(100).default('tollgate:'),
    admin_token: bearerToken.min(1).optional(),
    secrets_key: z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes')
      .optional(),
    limits: limits.default(limits.parse({})),
    routing: routing.default(routing.parse({})),
    ledger: ledger.default(ledger.parse({})),
    providers: z.array(provider).min(1),
    models: z.array(model).min(1),
    plugins: z.object({ web: webPlugin.optional() }).strict().default({}),
    alerts: alerts.default(alerts.parse({})),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** GET /metrics answers the admin token, or this token (for a scraper that should not hold the admin token). */
    metrics: z
      .object({ token: bearerToken.min(16, 'must be at least 16 characters').optional() })
      .strict()
      .default({}),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const providerIds = new Set<string>();
    cfg.providers.forEach((p, i) => {
      if (providerIds.has(p.id)) {
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'id'], message: `duplicate provider id "${p.id}"` });
      }
      providerIds.add(p.id);
    });
    const webhookIds = new Set<string>();
    cfg.alerts.webhooks.forEach((w, i) => {
      const id = w.id ?? `webhook-${i + 1}`;
      if (webhookIds.has(id)) ctx.addIssue({ code: 'custom', path: ['alerts', 'webhooks', i, 'id'], message: `duplicate webhook id "${id}"` });
      webhookIds.add(id);
    });
    const modelIds = new Set<string>();
    cfg.models.forEach((m, i) => {
      if (modelIds.has(m.id)) {
        ctx.addIssue({ code: 'custom', path: ['models', i, 'id'], message: `duplicate model id "${m.id}"` });
      }
      modelIds.add(m.id);
      m.endpoints.forEach((e, j) => {
        if (!providerIds.has(e.provider)) {
          ctx.addIssue({
            code: 'custom',
            path: ['models', i, 'endpoints', j, 'provider'],
            message: `names provider "${e.provider}", which is not in providers`,
          });
        }
      });
    });
  })
  .transform((cfg) => ({
    ...cfg,
    alerts: { ...cfg.alerts, webhooks: cfg.alerts.webhooks.map((w, i) => ({ ...w, id: w.id ?? `webhook-${i + 1}` })) },
    limits: { ...cfg.limits, request_deadline_ms: cfg.limits.request_deadline_ms ?? defaultRequestDeadlineMs(cfg.providers) },
  }));

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type ProviderConfig = Config['providers'][number];
export type ModelConfig = Config['models'][number];
export type EndpointConfig = ModelConfig['endpoints'][number];
export type PricingConfig = EndpointConfig['pricing'];
export type PartTokensConfig = Config['limits']['in_flight']['part_tokens'];
export type AlertsConfig = Config['alerts'];
export type WebhookConfig = AlertsConfig['webhooks'][number];
