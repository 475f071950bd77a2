import { z } from 'zod';
import { generationSchema } from './answer-schemas.js';

/** Answers of the routes the dashboard added (an extension of CONTRACT §5 and §4). */

/** GET /api/v1/generations: the calling key's latest generations, newest first. */
export const generationListSchema = z.object({ data: z.array(generationSchema) }).meta({ id: 'GenerationList' });

/** GET /api/v1/key/activity: the calling key's spend per UTC day and model over the last 30 days. */
export const keyActivitySchema = z
  .object({
    data: z.array(
      z.object({
        date: z.string(),
        model: z.string(),
        requests: z.int(),
        usage: z.number(),
        byok_usage: z.number(),
        prompt_tokens: z.int(),
        completion_tokens: z.int(),
      }),
    ),
    from: z.string(),
    to: z.string(),
  })
  .meta({ id: 'KeyActivity' });

/** GET /api/v1/admin/accounts/:id/byok: which configured providers the account stored its own key for (never the key). */
export const byokListSchema = z.object({ data: z.array(z.object({ provider: z.string(), stored: z.boolean() })) }).meta({ id: 'ByokList' });

/** GET /api/v1/admin/providers: providers' recent health as this process saw it. */
export const providerHealthSchema = z
  .object({
    per_process: z.literal(true),
    window_seconds: z.int(),
    data: z.array(
      z.object({
        provider: z.string(),
        ok: z.int(),
        failures: z.record(z.string(), z.int()),
        error_rate: z.number().nullable(),
        latency_ms: z.object({ mean: z.number().nullable(), max: z.number().nullable(), ttft_mean: z.number().nullable() }),
      }),
    ),
    cooldowns: z.array(z.object({ provider: z.string(), model: z.string(), remaining_ms: z.int(), provider_code: z.string().nullable() })),
  })
  .meta({ id: 'ProviderHealth' });
