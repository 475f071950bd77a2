import { z } from 'zod';

/**
 * What an error's `metadata` may say (CONTRACT §6). Open: an error adds what helps with it (the
 * estimate, the balance, the providers tried).
 */
export const errorMetadataSchema = z
  .looseObject({
    reason: z.string().optional().meta({
      description: 'Why: in_flight_budget_exhausted or weight_exceeds_budget (402); limits_unavailable or ledger_unavailable (503)',
    }),
    limit_source: z.string().optional().meta({ description: 'Which limit refused a 402: platform_credits, platform_key_limit or platform_in_flight_budget' }),
    limit: z.union([z.string(), z.number()]).optional().meta({
      description:
        "A platform 429: the limit's name (free-models-per-minute, free-models-per-day, model-capacity, ddos); a key-limit 402: the key's limit in credits",
    }),
    remedy_hint: z.string().optional().meta({ description: 'What the caller can do about it' }),
    provider_name: z.string().nullable().optional().meta({ description: 'The provider that failed or rate-limited the request' }),
    provider_code: z.string().optional().meta({ description: "The provider's own error code, when it gave one" }),
    field: z.string().optional().meta({ description: 'A 400: the field that is wrong' }),
  })
  .meta({ id: 'ErrorMetadata' });

/** An error: in an error answer's body, and in the chunk that ends a stream that failed midway. */
export const errorObjectSchema = z.object({
  code: z.number().int().meta({ description: 'The HTTP status' }),
  message: z.string(),
  metadata: errorMetadataSchema.optional(),
});

/** The body of every error answer (CONTRACT §6): never a stack trace. */
export const errorBodySchema = z
  .object({ error: errorObjectSchema })
  .meta({ id: 'Error', description: 'An error: {"error": {"code": <HTTP status>, "message": "…", "metadata": {…}?}}' });

export type ErrorBody = z.output<typeof errorBodySchema>;
export type ErrorMetadata = z.output<typeof errorMetadataSchema>;
