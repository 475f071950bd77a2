/** What browser apps of the configured origins may do (listen.cors_origins): one list for every route. */
export const CORS_RULES = {
  methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
  exposedHeaders: ['x-request-id', 'x-generation-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
  maxAge: 600,
} as const;

/**
 * The CORS headers of a request that is no preflight, for a route served outside Fastify (the chat
 * route), the same that @fastify/cors sets on every other route with the gateway's options (app.ts):
 * with `*` configured, any origin; else the request's origin when it is one of `origins`, and `Vary:
 * Origin` either way; the exposed headers always. Undefined when no origin is configured (CORS off).
 */
export function corsHeaders(origins: readonly string[]): ((origin: string | undefined) => Record<string, string>) | undefined {
  if (origins.length === 0) return undefined;
  const exposed = CORS_RULES.exposedHeaders.join(', ');
  if (origins.includes('*')) {
    const headers = { 'access-control-allow-origin': '*', 'access-control-expose-headers': exposed };
    return () => headers;
  }
  const allowed = new Set(origins);
  const other = { vary: 'Origin', 'access-control-expose-headers': exposed };
  return (origin) =>
    origin !== undefined && allowed.has(origin) ? { vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-expose-headers': exposed } : other;
}
