import type { z } from 'zod';

/**
 * What the OpenAPI document says about one route, written next to the route's registration (in its
 * Fastify `config`) from the same zod schemas that validate its input and shape its answers. Nothing
 * here runs per request: app.ts collects the entries as routes are registered, and
 * openapi-document.ts turns them into the document.
 */

/** Who may call a route: an inference API key, a management key, the admin token, `metrics.token`, or anyone. */
export type RouteAuth = 'api_key' | 'management_key' | 'admin' | 'metrics_token' | 'none';

/** The error statuses a route documents, each answered with the one Error body (CONTRACT §6). */
export type ErrorStatus = 400 | 401 | 402 | 404 | 413 | 422 | 429 | 500 | 502 | 503;

/** An answer other than a plain JSON body: no body (204), several media types, or headers. */
export interface AnswerDoc {
  description?: string;
  /** An application/json body. */
  json?: z.ZodType;
  /** A text/event-stream body: `data:` events, each one of these (then `data: [DONE]`). */
  sse?: z.ZodType;
  /** A text/plain body, described. */
  text?: string;
  /** Headers the answer carries: name → description. */
  headers?: Record<string, string>;
}

export interface RouteDoc {
  /** Unique across the document; what generated clients name the call. */
  operationId: string;
  summary: string;
  description?: string;
  tag: 'public' | 'management' | 'admin' | 'operations';
  /** Credentials the route takes; any one of them will do. */
  auth: RouteAuth | readonly RouteAuth[];
  /** The JSON body, read with this schema (documented as its input). */
  body?: z.ZodType;
  /** An example body for the document. */
  bodyExample?: unknown;
  /** The query, read with this object schema (documented as its input). */
  query?: z.ZodObject;
  /** Path parameters (`:name` in the path): name → description. Every one is a string. */
  params?: Record<string, string>;
  /** Success answers: a schema alone is an application/json body. */
  responses: Record<number, z.ZodType | AnswerDoc>;
  /**
   * Errors the route can answer with beyond the ones every route of its kind can: 401 comes with any
   * credential, 503 (the ledger) with any credential on a route that is not a probe, 400 and 413 with
   * a body, 400 with a query, 429 (the DDoS guard) with every route that is not a probe, 500 with all.
   */
  errors?: readonly ErrorStatus[];
  /** A probe (/health, /health/ready, /metrics): not behind the DDoS guard. */
  probe?: boolean;
}

/** Route options carrying the route's documentation: `app.get(path, doc({...}), handler)`. */
export function doc(d: RouteDoc): { config: { openapi: RouteDoc } } {
  return { config: { openapi: d } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry in the OpenAPI document (route-doc.ts). */
    openapi?: RouteDoc;
  }
}
