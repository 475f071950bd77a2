import { z } from 'zod';

/**
 * The answers of the public read routes (CONTRACT §5) and the probes (§1, §8): the views return these
 * types, and the OpenAPI document is generated from them. Fields that mean nothing here carry
 * OpenRouter's types with a neutral value (null, false, []), so that its SDK parses them.
 */

const credits = z.number();
const price = z.string().meta({ description: 'Credits per unit, as a decimal string' });

/** GET /health, /health/ready. */
export const healthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

/** GET /api/v1/credits. */
export const creditsAnswerSchema = z
  .object({
    data: z.object({
      total_credits: credits.meta({ description: 'Credits purchased and added, all told' }),
      total_usage: credits.meta({ description: 'Credits spent; the balance is total_credits − total_usage' }),
    }),
  })
  .meta({ id: 'Credits' });

/** A model as GET /api/v1/models lists it. */
export const modelSchema = z
  .object({
    id: z.string(),
    canonical_slug: z.string(),
    name: z.string(),
    created: z.number().int(),
    description: z.string(),
    context_length: z.number().int(),
    architecture: z.object({
      input_modalities: z.array(z.string()),
      output_modalities: z.array(z.string()),
      modality: z.string(),
      tokenizer: z.string(),
      instruct_type: z.string().nullable(),
    }),
    pricing: z
      .object({ prompt: price, completion: price, request: price, image: price })
      .meta({ description: "The first endpoint's prices: per prompt token, completion token, request and image" }),
    top_provider: z.object({ is_moderated: z.boolean(), context_length: z.number().int(), max_completion_tokens: z.number().int().nullable() }),
    per_request_limits: z.record(z.string(), z.unknown()).nullable(),
    supported_parameters: z.array(z.string()),
    default_parameters: z.record(z.string(), z.unknown()).nullable(),
    supported_voices: z.array(z.string()).nullable(),
    links: z.object({ details: z.string() }),
  })
  .meta({ id: 'Model', description: 'A model served here' });

/** GET /api/v1/models. */
export const modelListSchema = z.object({
  data: z.array(modelSchema),
  links: z.object({ next: z.string().nullable() }),
  total_count: z.number().int(),
});

const nullableInt = z.number().int().nullable();
const nullableString = z.string().nullable();

/** A generation as GET /api/v1/generation answers it. */
export const generationSchema = z
  .object({
    id: z.string(),
    model: z.string().meta({ description: 'The model that served it' }),
    provider_name: z.string(),
    created_at: z.iso.datetime(),
    origin: z.string(),
    data_region: z.string(),
    api_type: z.string(),
    is_byok: z.boolean(),
    streamed: z.boolean(),
    cancelled: z.boolean(),
    finish_reason: nullableString,
    native_finish_reason: nullableString,
    usage_source: z
      .enum(['upstream', 'counted'])
      .nullable()
      .meta({ description: "Where the token counts came from: the provider's usage, or the gateway's own count" }),
    tokens_prompt: z.number().int(),
    tokens_completion: z.number().int(),
    native_tokens_prompt: z.number().int(),
    native_tokens_completion: z.number().int(),
    native_tokens_cached: nullableInt,
    native_tokens_reasoning: nullableInt,
    native_tokens_completion_images: nullableInt,
    total_cost: credits.meta({ description: 'Credits charged (for BYOK, the fee)' }),
    usage: credits,
    upstream_inference_cost: credits.nullable().meta({ description: "BYOK: the list-price cost paid with the account's own key" }),
    cache_discount: z.number().nullable(),
    latency: z.number().meta({ description: 'Milliseconds' }),
    generation_time: z.number(),
    moderation_latency: z.number().nullable(),
    app_id: nullableInt,
    num_fetches: nullableInt,
    num_input_audio_prompt: nullableInt,
    num_media_completion: nullableInt,
    num_media_prompt: nullableInt,
    num_search_results: nullableInt,
    external_user: nullableString,
    http_referer: nullableString,
    preset_id: nullableString,
    router: nullableString,
    service_tier: nullableString,
    upstream_id: nullableString,
    user_agent: nullableString,
    web_search_engine: nullableString,
    workspace_id: nullableString,
    provider_responses: z.array(z.unknown()).nullable(),
  })
  .meta({ id: 'Generation', description: 'One request: what served it, its tokens and its cost' });

/** GET /api/v1/generation. */
export const generationAnswerSchema = z.object({ data: generationSchema });

export type HealthJson = z.output<typeof healthSchema>;
export type CreditsAnswerJson = z.output<typeof creditsAnswerSchema>;
export type ModelJson = z.output<typeof modelSchema>;
export type ModelListJson = z.output<typeof modelListSchema>;
export type GenerationJson = z.output<typeof generationSchema>;
export type GenerationAnswerJson = z.output<typeof generationAnswerSchema>;
