import { z } from 'zod';

/** GET /api/v1/generation?id=… */
export const generationQuerySchema = z.object({
  id: z.string().min(1).meta({ description: 'The generation id (gen-…), from the answer or its X-Generation-Id header' }),
});
