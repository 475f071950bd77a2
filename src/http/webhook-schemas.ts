import { z } from 'zod';

/** The alert webhooks as the admin API answers them (src/alerts/alerts.ts: WebhookStatus, WebhookTestResult). */
const eventType = z.enum(['key_limit_80', 'key_limit_100', 'balance_low', 'provider_cooldown', 'test']);

export const webhookStatusSchema = z
  .object({
    id: z.string(),
    url: z.string().meta({ description: 'Without userinfo or query string' }),
    events: z.array(eventType),
    pending: z.int(),
    delivered: z.int(),
    failed: z.int(),
    dropped: z.int(),
    last_success_at: z.iso.datetime().nullable(),
    last_failure_at: z.iso.datetime().nullable(),
    last_failure: z.string().nullable(),
  })
  .meta({ id: 'Webhook' });
export const webhookListSchema = z.object({ data: z.array(webhookStatusSchema) });

export const webhookTestSchema = z.object({
  data: z
    .object({ id: z.string(), event_id: z.string(), delivered: z.boolean(), status: z.int().nullable(), error: z.string().nullable() })
    .meta({ id: 'WebhookTest' }),
});
