import { z } from 'zod';
import { invalidRequest } from '../errors.js';
import { isJsonObject } from '../json-object.js';

/** Largest completion-token cap accepted at all; a model's context length narrows it further. */
export const MAX_TOKENS_CEILING = 10_000_000;

const providerIds = z.array(z.string().min(1)).max(64);

// The ceiling is checked first: a number past it (1e300) is also past the integers zod calls whole,
// and "must be a whole number" would name the wrong fault.
const tokens = z
  .number({ error: 'must be a number' })
  .max(MAX_TOKENS_CEILING, `must be at most ${MAX_TOKENS_CEILING}`)
  .int('must be a whole number')
  .min(1, 'must be at least 1');

const message = z.looseObject({
  role: z.string({ error: 'must be a string such as "user"' }).min(1),
});

/**
 * A chat-completions request: OpenAI's fields (passed on to the upstream as they are) plus
 * OpenRouter's routing fields (consumed here).
 */
export const chatRequestSchema = z
  .looseObject({
    model: z.string({ error: 'must be a string' }).min(1).optional().meta({ description: 'A model id from GET /api/v1/models' }),
    models: z
      .array(z.string().min(1), { error: 'must be an array of model ids' })
      .max(16)
      .optional()
      .meta({ description: 'Fallback models, tried in order when the first cannot serve the request' }),
    messages: z.array(message, { error: 'must be an array of messages' }).min(1, 'must hold at least one message'),
    stream: z
      .boolean({ error: 'must be true or false' })
      // null is no answer either way (OpenAI's SDK types it `false | null`): not streamed.
      .nullish()
      .meta({ description: 'true: server-sent events, the usage with its cost in the last chunk' }),
    max_tokens: tokens.nullish(),
    max_completion_tokens: tokens.nullish(),
    n: z.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be at least 1').max(128, 'must be at most 128').nullish(),
    provider: z
      .looseObject({
        order: providerIds.optional(),
        only: providerIds.optional(),
        ignore: providerIds.optional(),
        allow_fallbacks: z.boolean().optional(),
      })
      // null is no preference (OpenRouter's SDK allows it).
      .nullish()
      .meta({ description: 'Provider preferences: which providers to try, in what order' }),
    plugins: z
      .array(z.looseObject({ id: z.string().min(1) }))
      .max(8)
      .optional()
      .meta({ description: 'Plugins, e.g. [{"id": "web"}]: web search results injected into the prompt' }),
  })
  .meta({
    id: 'ChatRequest',
    description: "OpenAI's chat completions request (its other fields are passed on to the provider as they are), with OpenRouter's routing fields",
  });

export type ChatRequest = z.output<typeof chatRequestSchema>;

/** Fields that steer the gateway and are not sent upstream. */
export const GATEWAY_FIELDS = ['models', 'provider', 'plugins', 'route', 'transforms', 'usage', 'stream_options'] as const;

const isTokens = (v: unknown, max: number) => v === undefined || v === null || (Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= max);

/**
 * Whether `body` has the shape nearly every request has, and so passes chatRequestSchema as it is:
 * a model, messages each with a role, and the common optional fields, each valid. Checked by hand
 * because zod copies the body and every message; whatever this does not vouch for (the routing
 * fields, anything invalid) goes through zod, for its answer or its error.
 */
export function plainlyValid(body: Record<string, unknown>): boolean {
  const { model, messages } = body;
  if (!(model === undefined || (typeof model === 'string' && model.length > 0))) return false;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const m of messages) {
    if (!isJsonObject(m) || typeof m.role !== 'string' || m.role.length === 0) return false;
  }
  return (
    body.models === undefined &&
    body.provider === undefined &&
    body.plugins === undefined &&
    (body.stream === undefined || typeof body.stream === 'boolean') &&
    isTokens(body.max_tokens, MAX_TOKENS_CEILING) &&
    isTokens(body.max_completion_tokens, MAX_TOKENS_CEILING) &&
    isTokens(body.n, 128)
  );
}

export function parseChatRequest(body: unknown): ChatRequest {
  if (!isJsonObject(body)) {
    throw invalidRequest('the request body must be a JSON object with "model" and "messages"');
  }
  if (plainlyValid(body)) return body as ChatRequest;
  const result = chatRequestSchema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue?.path.length ? issue.path.join('.') : 'body';
    throw invalidRequest(`${path}: ${issue?.message ?? 'invalid value'}`, { field: path });
  }
  return result.data;
}

/**
 * The completion-token cap the request set, if any: the larger of `max_tokens` and
 * `max_completion_tokens` when it sets both, since an upstream may honour either (CONTRACT §7).
 */
export function requestedMaxTokens(req: ChatRequest): number | undefined {
  const a = req.max_tokens;
  const b = req.max_completion_tokens;
  if (typeof a !== 'number') return typeof b === 'number' ? b : undefined;
  return typeof b === 'number' && b > a ? b : a;
}
