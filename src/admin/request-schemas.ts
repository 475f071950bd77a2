import { z } from 'zod';
import { accountTypes } from '../ledger/ledger.js';
import { isoDate, money } from './parse-input.js';

/**
 * The bodies (and the query) the admin API (CONTRACT §4) and the management API (§9) accept: the
 * services validate with these, and the OpenAPI document is generated from them (as their input).
 */

/** The longest a rotated-out secret keeps working: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;

const bool = z.boolean({ error: 'must be true or false' });
/** A name is stored as text, which cannot hold a NUL character on PostgreSQL. */
const noNul = (v: string) => !v.includes('\0');
const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const keyFields = {
  name: z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .max(200, 'must be at most 200 characters')
    .refine(noNul, NUL_MESSAGE),
  limit: money.nullable().meta({ description: 'Spending limit in credits (null: none); at most 9 decimals' }),
  limit_reset: z
    .enum(['daily', 'weekly', 'monthly'], { error: 'must be "daily", "weekly", "monthly" or null' })
    .nullable()
    .meta({ description: 'How often the limit starts again (UTC days, weeks from Monday, calendar months); null: never' }),
  include_byok_in_limit: bool,
  expires_at: isoDate.nullable().meta({ description: 'When the key stops working (must be ahead); null: never' }),
};

/** POST /api/v1/admin/accounts. */
export const newAccountSchema = z
  .strictObject({
    name: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200).refine(noNul, NUL_MESSAGE),
    type: z.enum(accountTypes as [string, ...string[]], { error: `must be one of ${accountTypes.join(', ')}` }).default('prepaid'),
    created_at: isoDate.optional(),
    free_model_limits_exempt: z.boolean({ error: 'must be true or false' }).default(false),
  })
  .meta({ id: 'NewAccount', description: 'A new account' });

/** POST /api/v1/admin/accounts/:id/credits. */
export const creditsSchema = z
  .strictObject({
    amount: money.meta({ description: 'Credits: at most 9 decimals and 1,000,000,000 in size; a purchase is > 0, an adjustment either sign' }),
    kind: z.enum(['purchase', 'adjustment'], { error: 'must be "purchase" or "adjustment"' }).default('purchase'),
  })
  .meta({ id: 'CreditEntry', description: 'Credits added to an account (purchase: balance and total_purchased; adjustment: balance only)' });

/** PUT /api/v1/admin/accounts/:id/byok/:provider. */
export const byokSchema = z
  .strictObject({
    api_key: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(4096)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces or control characters'),
  })
  .meta({ id: 'ByokKey', description: "The account's own key for a provider, stored encrypted and never returned" });

/** POST /api/v1/admin/accounts/:id/keys (CONTRACT §4, §9). */
export const adminNewKeySchema = z
  .strictObject({
    name: keyFields.name.optional(),
    limit: keyFields.limit.optional(),
    limit_reset: keyFields.limit_reset.optional(),
    include_byok_in_limit: keyFields.include_byok_in_limit.optional(),
    expires_at: keyFields.expires_at.optional(),
    management: bool.optional().meta({ description: "true: a management key, which manages the account's keys and cannot be used for inference" }),
  })
  .meta({ id: 'AdminNewKey', description: 'A new key, made by the operator' });

/** POST /api/v1/keys (CONTRACT §9): a name is required, and management keys are the operator's to make. */
export const ownerNewKeySchema = z
  .strictObject({
    name: keyFields.name.min(1, 'must not be empty'),
    limit: keyFields.limit.optional(),
    limit_reset: keyFields.limit_reset.optional(),
    include_byok_in_limit: keyFields.include_byok_in_limit.optional(),
    expires_at: keyFields.expires_at.optional(),
    workspace_id: z
      .string({ error: 'must be a string' })
      .optional()
      .meta({ description: "The account's id, as keys report it (the official SDK may send it); another workspace's is 404" }),
  })
  .meta({ id: 'NewKey', description: 'A new inference key, made with a management key' });

/** PATCH /api/v1/admin/keys/:hash and /api/v1/keys/:hash. */
export const keyPatchSchema = z
  .strictObject({
    name: keyFields.name.optional(),
    limit: keyFields.limit.optional(),
    limit_reset: keyFields.limit_reset.optional(),
    include_byok_in_limit: keyFields.include_byok_in_limit.optional(),
    disabled: bool.optional(),
    expires_at: keyFields.expires_at.optional(),
  })
  .meta({ id: 'KeyPatch', description: 'Changes to a key: only the fields sent change' });

/** POST …/keys/:hash/rotate. */
export const rotationSchema = z
  .strictObject({
    grace_seconds: z
      .number({ error: 'must be a number of seconds' })
      .int('must be a whole number of seconds')
      .min(0, 'must not be negative')
      .max(MAX_GRACE_SECONDS, `must be at most ${MAX_GRACE_SECONDS} (30 days)`)
      .optional()
      .meta({ description: 'How long the earlier secrets keep working (0, the default: they stop at once)' }),
  })
  .meta({ id: 'KeyRotation', description: 'A new secret for a key (same hash, usage and limits)' });

/** GET /api/v1/keys?offset=&include_disabled=&workspace_id= (CONTRACT §9). */
export const keysListQuerySchema = z.object({
  offset: z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number, 0 or more')
    .transform(Number)
    .optional()
    .meta({ description: 'Keys to skip (pages hold 100)' }),
  include_disabled: z.enum(['true', 'false'], { error: 'must be true or false' }).optional().meta({ description: 'true: disabled keys too' }),
  workspace_id: z.string().optional().meta({ description: "The account's id (another workspace holds none of its keys)" }),
});
