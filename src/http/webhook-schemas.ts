import { z } from 'zod';
import type { WebhookStatus, WebhookTestResult } from '../alerts/alerts.js';
import { alertEventTypes } from '../config/schema.js';

/** The alert webhooks as the admin API answers them: the schemas of src/alerts/alerts.ts's WebhookStatus and WebhookTestResult. */
export const webhookStatusSchema = z
  .object({
    id: z.string(),
    url: z.string().meta({ description: 'Without userinfo or query string' }),
    events: z.array(z.enum(alertEventTypes)),
    pending: z.int(),
    delivered: z.int(),
    failed: z.int(),
    dropped: z.int(),
    last_success_at: z.iso.datetime().nullable(),
    last_failure_at: z.iso.datetime().nullable(),
    last_failure: z.string().nullable(),
  })
  .meta({ id: 'Webhook' }) satisfies z.ZodType<WebhookStatus>;
export const webhookListSchema = z.object({ data: z.array(webhookStatusSchema) });

export const webhookTestSchema = z.object({
  data: z
    .object({ id: z.string(), event_id: z.string(), delivered: z.boolean(), status: z.int().nullable(), error: z.string().nullable() })
    .meta({ id: 'WebhookTest' }) satisfies z.ZodType<WebhookTestResult>,
});
