import { z } from 'zod';
import { errorObjectSchema } from '../error-body.js';

/**
 * The answers of POST /api/v1/chat/completions (CONTRACT §5): a whole answer and the chunks of a
 * streamed one. They are open objects: the gateway relays what the upstream sent, with its own fields
 * (id, model, provider, usage with the cost) in place. Types only on the hot path: nothing validates
 * an answer against these at run time (the tests do).
 */

const int = z.number().int();

/** The answer's `usage`: billed token counts and the cost charged. */
export const chatUsageSchema = z
  .object({
    prompt_tokens: int,
    completion_tokens: int.meta({ description: 'Billed completion tokens (reasoning included)' }),
    total_tokens: int,
    cost: z.number().meta({ description: 'Credits charged (for BYOK, the fee)' }),
    is_byok: z.boolean(),
    prompt_tokens_details: z.object({ cached_tokens: int }).optional(),
    completion_tokens_details: z.object({ reasoning_tokens: int }).optional(),
  })
  .meta({ id: 'ChatUsage', description: 'Billed token counts and the cost charged' });

const id = z.string().meta({ description: 'The generation id (gen-…), also in the X-Generation-Id header' });
const served = {
  id,
  created: int,
  model: z.string().meta({ description: 'The model that served the request' }),
  provider: z.string().meta({ description: 'The provider that served the request' }),
};

/** A whole (non-streamed) answer. */
export const chatCompletionSchema = z
  .looseObject({
    ...served,
    object: z.literal('chat.completion'),
    system_fingerprint: z.string().nullable(),
    choices: z.array(
      z.looseObject({
        index: int,
        finish_reason: z.string().nullable(),
        message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable().optional() }),
      }),
    ),
    usage: chatUsageSchema,
  })
  .meta({ id: 'ChatCompletion', description: "OpenAI's chat completion, with the provider and model that served it and the cost" });

/**
 * One `data:` event of a streamed answer: a relayed chunk; the last one, with no choices and the
 * usage with its cost (then `data: [DONE]`); or, when the stream failed midway, one with `error`
 * and `finish_reason: "error"` (then the stream ends, without `[DONE]`).
 */
export const chatCompletionChunkSchema = z
  .looseObject({
    ...served,
    object: z.literal('chat.completion.chunk'),
    system_fingerprint: z.string().optional(),
    choices: z.array(
      z.looseObject({
        index: int,
        delta: z.looseObject({ role: z.literal('assistant').optional(), content: z.string().nullable().optional() }),
        finish_reason: z.string().nullable(),
      }),
    ),
    usage: chatUsageSchema.optional(),
    error: errorObjectSchema.optional(),
  })
  .meta({ id: 'ChatCompletionChunk', description: 'One event of a streamed chat completion' });

export type ChatUsageJson = z.output<typeof chatUsageSchema>;
export type ChatCompletionJson = z.output<typeof chatCompletionSchema>;
export type ChatCompletionChunkJson = z.output<typeof chatCompletionChunkSchema>;
