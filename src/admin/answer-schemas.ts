import { z } from 'zod';

/**
 * The answers of the admin API (CONTRACT §4), the management API (§9) and GET /api/v1/key (§5): the
 * views (views.ts) return these types, and the OpenAPI document is generated from them. They shape
 * and document answers; nothing validates answers against them at run time (the tests do).
 */

/** Credits, as a JSON number (CONTRACT §3). */
const credits = z.number();
const time = z.iso.datetime();
const limitReset = z.enum(['daily', 'weekly', 'monthly']).nullable();

/** CONTRACT §4's Account. */
export const accountCoreSchema = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['prepaid', 'enterprise', 'subscription', 'invoice']),
  balance: credits,
  total_purchased: credits,
  total_usage: credits,
  created_at: time,
  free_model_limits_exempt: z.boolean(),
});

/** An account as the admin API answers it: CONTRACT §4's Account, and where it stands against its in-flight budget. */
export const accountSchema = accountCoreSchema
  .extend({
    in_flight: z
      .object({
        subject: z.boolean().meta({ description: 'Whether the in-flight spending budget applies to the account now' }),
        budget: credits,
        held: credits.meta({ description: 'Credits held by running requests and ones still settling' }),
      })
      .nullable()
      .meta({ description: 'null only in the answer to credits added while the limits store (Redis) did not answer: the credit is recorded' }),
  })
  .meta({ id: 'Account', description: 'An account, with where it stands against its in-flight spending budget' });

/** A key's limit and usage, as every key answer reports them (views.ts: limitAndUsage). */
const limitAndUsage = {
  limit: credits.nullable(),
  limit_reset: limitReset,
  limit_remaining: credits.nullable(),
  include_byok_in_limit: z.boolean(),
  usage: credits,
  usage_daily: credits,
  usage_weekly: credits,
  usage_monthly: credits,
  byok_usage: credits,
};

/** BYOK usage per period, on the management Key and /key (views.ts: byokPeriods). */
const byokPeriods = { byok_usage_daily: credits, byok_usage_weekly: credits, byok_usage_monthly: credits };

/** CONTRACT §4's KeyInfo: a key as the admin API answers it. */
export const keyInfoSchema = z
  .object({
    hash: z.string().meta({ description: "The key's public id" }),
    name: z.string(),
    label: z.string().meta({ description: 'The first and last characters of the secret' }),
    disabled: z.boolean(),
    ...limitAndUsage,
    expires_at: time.nullable(),
    created_at: time,
    updated_at: time.nullable(),
    management: z.boolean().meta({ description: 'A management key (CONTRACT §9): manages keys, no inference' }),
  })
  .meta({ id: 'KeyInfo', description: 'An API key (never its secret)' });

/** A key as the management API answers it (CONTRACT §9): the shape of OpenRouter's SDK `Key`. */
export const managedKeySchema = z
  .object({
    hash: z.string(),
    name: z.string(),
    label: z.string(),
    disabled: z.boolean(),
    ...limitAndUsage,
    ...byokPeriods,
    created_at: time,
    updated_at: time.nullable(),
    expires_at: time.nullable(),
    creator_user_id: z.string().nullable(),
    workspace_id: z.string().meta({ description: "The key's account" }),
    external_user: z.string().nullable(),
  })
  .meta({ id: 'Key', description: 'An inference key of the account (OpenRouter-compatible)' });

/** GET /api/v1/key (CONTRACT §5), in the shape OpenRouter's SDK parses. */
export const keyStatusSchema = z
  .object({
    label: z.string(),
    ...limitAndUsage,
    ...byokPeriods,
    is_free_tier: z.boolean(),
    free_model_daily_requests: z
      .object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int() })
      .meta({ description: "Requests to free models today (UTC), against the account's daily ceiling" }),
    expires_at: time.nullable(),
    is_management_key: z.boolean(),
    is_provisioning_key: z.boolean(),
    creator_user_id: z.string().nullable(),
    organization_id: z.string().nullable(),
    workspace_id: z.string().nullable(),
    allowed_data_regions: z.array(z.string()),
    rate_limit: z.object({ requests: z.number(), interval: z.string(), note: z.string() }).meta({ description: "Deprecated (OpenRouter's neutral values)" }),
  })
  .meta({ id: 'KeyStatus', description: "The calling key's limits and usage" });

/** The admin API's answers: `{data: …}`. */
export const accountAnswerSchema = z.object({ data: accountSchema });
export const keyInfoAnswerSchema = z.object({ data: keyInfoSchema });
export const keyInfoListSchema = z.object({ data: z.array(keyInfoSchema) });

/** GET /api/v1/key. */
export const keyStatusAnswerSchema = z.object({ data: keyStatusSchema });

/** A key with its secret, shown once: a new key, or a rotated one. */
const keySecretSchema = z.string().meta({ description: 'The secret (sk-tg-v1-…), shown only here' });
export const issuedKeyInfoSchema = z.object({ key: keySecretSchema, data: keyInfoSchema });
export const issuedManagedKeySchema = z.object({ data: managedKeySchema, key: keySecretSchema });

/** `{deleted: true}`. */
export const deletedSchema = z.object({ deleted: z.literal(true) });

/** GET /api/v1/keys: a page of the account's inference keys (100 a page). */
export const managedKeyListSchema = z.object({ data: z.array(managedKeySchema) });
export const managedKeyAnswerSchema = z.object({ data: managedKeySchema });

export type AccountJson = z.output<typeof accountSchema>;
export type AccountCoreJson = z.output<typeof accountCoreSchema>;
export type KeyInfoJson = z.output<typeof keyInfoSchema>;
export type ManagedKeyJson = z.output<typeof managedKeySchema>;
export type KeyStatusJson = z.output<typeof keyStatusSchema>;
export type IssuedKeyInfoJson = z.output<typeof issuedKeyInfoSchema>;
export type IssuedManagedKeyJson = z.output<typeof issuedManagedKeySchema>;
export type ManagedKeyListJson = z.output<typeof managedKeyListSchema>;
export type ManagedKeyAnswerJson = z.output<typeof managedKeyAnswerSchema>;
export type DeletedJson = z.output<typeof deletedSchema>;
export type KeyStatusAnswerJson = z.output<typeof keyStatusAnswerSchema>;
