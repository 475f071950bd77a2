import { z } from 'zod';
import { errorBodySchema } from '../error-body.js';
import type { AnswerDoc, ErrorStatus, RouteAuth, RouteDoc } from './route-doc.js';

type Json = Record<string, unknown>;

/** A route as registered, with its documentation. */
export interface DocumentedRoute {
  method: string;
  url: string;
  doc: RouteDoc;
}

export interface DocumentInfo {
  /** The gateway's version (package.json). */
  version: string;
  /** The configured models' ids. */
  models: readonly string[];
}

const SCHEMAS = '#/components/schemas/';

/** One response component per error status, all with the one Error body. */
const ERRORS: Record<ErrorStatus, { name: string; description: string; headers?: Record<string, string> }> = {
  400: { name: 'BadRequest', description: 'Malformed JSON, a wrong field or an unknown model: the message names what is wrong (metadata.field)' },
  401: { name: 'Unauthorized', description: 'A missing, invalid, disabled or expired credential, or one not fit for this route' },
  402: {
    name: 'PaymentRequired',
    description: 'A spending limit refused the request: metadata.limit_source, metadata.reason (in-flight cases) and metadata.remedy_hint',
    headers: { 'Retry-After': 'Whole seconds (≥ 1), on in_flight_budget_exhausted only' },
  },
  404: { name: 'NotFound', description: "No such thing, or another account's" },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than listen.body_limit_mb, or the provider refused the request as too large' },
  422: { name: 'UnprocessableEntity', description: 'Every provider refused the request itself (its scrubbed message)' },
  429: {
    name: 'TooManyRequests',
    description:
      "A platform limit (metadata.limit: free-models-per-minute, free-models-per-day, model-capacity, ddos) or every provider's rate limit (metadata.provider_name)",
    headers: {
      'X-RateLimit-Limit': "The platform limit's ceiling",
      'X-RateLimit-Remaining': 'What is left of it',
      'X-RateLimit-Reset': 'When it resets, Unix time in milliseconds',
      'Retry-After': 'Seconds to wait, when waiting helps',
    },
  },
  500: { name: 'InternalError', description: 'An unexpected error; the details are in the gateway log' },
  502: { name: 'BadGateway', description: 'Every provider failed (and none rate-limited the request)' },
  503: {
    name: 'ServiceUnavailable',
    description: 'A store the gateway needs does not answer (metadata.reason: ledger_unavailable or limits_unavailable), or it is shutting down',
    headers: { 'Retry-After': 'Seconds to wait' },
  },
};

const SECURITY: Record<Exclude<RouteAuth, 'none'>, { name: string; description: string }> = {
  api_key: { name: 'apiKey', description: 'An inference API key (sk-tg-v1-…): Authorization: Bearer <API key>' },
  management_key: { name: 'managementKey', description: "A management key (CONTRACT §9): manages its account's keys, no inference" },
  admin: { name: 'adminToken', description: "The gateway's admin token (admin_token in the config)" },
  metrics_token: { name: 'metricsToken', description: 'metrics.token from the config: reads /metrics only' },
};

const TAGS = [
  { name: 'public', description: 'Inference and the account reads, with an API key (OpenRouter-compatible)' },
  { name: 'management', description: "Self-service key management with a management key (OpenRouter's management API)" },
  { name: 'admin', description: 'Accounts, credits, keys and BYOK keys, with the admin token' },
  { name: 'operations', description: 'Probes, metrics and this document' },
];

const STATUS_TEXT: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'No content' };

/**
 * A union member no JSON can carry (a value made in process, as DecimalText) is left out of the
 * document: the member JSON Schema has for it (`{}`, anything) would say more is accepted than is.
 */
function leaveOutInProcessValues(ctx: { jsonSchema: Json }): void {
  const anyOf = ctx.jsonSchema.anyOf;
  if (!Array.isArray(anyOf)) return;
  const represented = anyOf.filter((s) => typeof s !== 'object' || s === null || Object.keys(s).length > 0);
  if (represented.length === anyOf.length) return;
  delete ctx.jsonSchema.anyOf;
  if (represented.length === 1) Object.assign(ctx.jsonSchema, represented[0]);
  else ctx.jsonSchema.anyOf = represented;
}

/**
 * The JSON Schemas of one document: each zod schema converted once, for its input (request bodies,
 * queries) or its output (answers); schemas named with `.meta({id})` become components.
 */
class SchemaSet {
  readonly components: Record<string, Json> = {};
  private readonly texts = new Map<string, string>();

  /** `schema` as JSON Schema (draft 2020-12, OpenAPI 3.1's dialect), its named parts hoisted into components. */
  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', override: leaveOutInProcessValues }) as Json;
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, Json>;
    delete json.$defs;
    for (const [id, def] of Object.entries(defs)) this.add(id, relink(def) as Json);
    return relink(json) as Json;
  }

  /** A component; one name is one schema (a request schema and an answer schema may not share a name). */
  private add(id: string, schema: Json): void {
    const text = JSON.stringify(schema);
    const known = this.texts.get(id);
    if (known !== undefined && known !== text) throw new Error(`OpenAPI: two different schemas are named "${id}"`);
    this.texts.set(id, text);
    this.components[id] = schema;
  }
}

/** `$ref`s to `$defs` pointed at the document's components instead. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/') ? SCHEMAS + v.slice('#/$defs/'.length) : relink(v);
  }
  return out;
}

/** Errors a route can answer with: its own and those of every route of its kind (RouteDoc.errors). */
function errorStatuses(d: RouteDoc): ErrorStatus[] {
  const auth = [d.auth].flat();
  const all = new Set<ErrorStatus>(d.errors ?? []);
  if (auth.some((a) => a !== 'none')) all.add(401);
  // The ledger does not answer: a route that reads or writes it with a credential checked.
  if (auth.some((a) => a !== 'none') && !d.probe) all.add(503);
  if (d.body) all.add(400).add(413);
  if (d.query) all.add(400);
  if (!d.probe) all.add(429);
  all.add(500);
  return [...all].sort((a, b) => a - b);
}

function answer(status: number, a: z.ZodType | AnswerDoc, schemas: SchemaSet): Json {
  const spec: AnswerDoc = a instanceof z.ZodType ? { json: a } : a;
  const out: Json = { description: spec.description ?? STATUS_TEXT[status] ?? 'OK' };
  const content: Json = {};
  if (spec.json) content['application/json'] = { schema: schemas.convert(spec.json, 'output') };
  if (spec.sse) {
    content['text/event-stream'] = {
      schema: { type: 'string', description: 'Server-sent events: `data: <JSON>` events (x-itemSchema), then `data: [DONE]`' },
      // OpenAPI 3.2's itemSchema, as an extension: the schema of each event's data.
      'x-itemSchema': schemas.convert(spec.sse, 'output'),
    };
  }
  if (spec.text !== undefined) content['text/plain'] = { schema: { type: 'string', description: spec.text } };
  if (Object.keys(content).length > 0) out.content = content;
  if (spec.headers) out.headers = headers(spec.headers);
  return out;
}

function headers(described: Record<string, string>): Json {
  return Object.fromEntries(Object.entries(described).map(([name, description]) => [name, { description, schema: { type: 'string' } }]));
}

/** The parameters of a route: its path's (`:name`) and its query's. */
function parameters(route: DocumentedRoute, schemas: SchemaSet): Json[] {
  const out: Json[] = [];
  for (const m of route.url.matchAll(/:(\w+)/g)) {
    const name = m[1] as string;
    const description = route.doc.params?.[name];
    out.push({ name, in: 'path', required: true, schema: { type: 'string' }, ...(description ? { description } : {}) });
  }
  if (route.doc.query) {
    const query = schemas.convert(route.doc.query, 'input');
    const required = new Set((query.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((query.properties ?? {}) as Record<string, Json>)) {
      const { description, ...rest } = schema;
      out.push({ name, in: 'query', required: required.has(name), schema: rest, ...(description ? { description } : {}) });
    }
  }
  return out;
}

function operation(route: DocumentedRoute, schemas: SchemaSet): Json {
  const d = route.doc;
  const op: Json = { operationId: d.operationId, summary: d.summary, tags: [d.tag] };
  if (d.description) op.description = d.description;
  const auth = [d.auth].flat().filter((a): a is Exclude<RouteAuth, 'none'> => a !== 'none');
  op.security = auth.map((a) => ({ [SECURITY[a].name]: [] }));
  const params = parameters(route, schemas);
  if (params.length > 0) op.parameters = params;
  if (d.body) {
    const media: Json = { schema: schemas.convert(d.body, 'input') };
    if (d.bodyExample !== undefined) media.example = d.bodyExample;
    // A body is optional when an empty one is valid (the services read a missing body as {}).
    op.requestBody = { required: !d.body.safeParse({}).success, content: { 'application/json': media } };
  }
  const responses: Json = {};
  for (const [status, a] of Object.entries(d.responses)) responses[status] = answer(Number(status), a, schemas);
  for (const status of errorStatuses(d)) responses[String(status)] ??= { $ref: `#/components/responses/${ERRORS[status].name}` };
  op.responses = responses;
  return op;
}

/** The OpenAPI 3.1 document of `routes`. */
export function openApiDocument(routes: readonly DocumentedRoute[], info: DocumentInfo): Json {
  const schemas = new SchemaSet();
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route, schemas);
  }
  const errorBody = schemas.convert(errorBodySchema, 'output');
  const responses = Object.fromEntries(
    Object.values(ERRORS).map((e) => [
      e.name,
      { description: e.description, content: { 'application/json': { schema: errorBody } }, ...(e.headers ? { headers: headers(e.headers) } : {}) },
    ]),
  );
  const securitySchemes = Object.fromEntries(Object.values(SECURITY).map((s) => [s.name, { type: 'http', scheme: 'bearer', description: s.description }]));
  const models = info.models.length > 0 ? ` Models served here: ${info.models.join(', ')}.` : '';
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate',
      version: info.version,
      description: `An inference-routing gateway with OpenRouter-style usage limits: the public API (OpenRouter-compatible), the management API and the admin API.${models}`,
    },
    tags: TAGS,
    paths,
    components: { schemas: sortedKeys(schemas.components), responses, securitySchemes },
  };
}

function sortedKeys(o: Record<string, Json>): Record<string, Json> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
