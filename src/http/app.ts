import { mayNamePrototypeKeys } from './prototype-keys.js';
import { RequestIds } from './request-ids.js';
import { STATUS_CODES } from 'node:http';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppDeps } from './app-deps.js';
import type { KeyRecord } from '../ledger/ledger.js';
import { isPromise, type Awaitable } from '../awaitable.js';
import { registerDashboard } from './dashboard.js';
import { clientErrorAnswer, registerErrorHandling, toHttpError } from './error-handler.js';
import { GatewayError } from '../errors.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoute } from './routes/chat-completions.js';
import { registerMetricsRoute } from './routes/metrics.js';
import { registerManagementRoutes } from './routes/management.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { registerPublicRoutes } from './routes/public.js';
import type { DocumentedRoute } from './openapi-document.js';

/** A request id a client may send (`X-Request-Id`) and have kept: short, and plain characters only. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

const shuttingDown = () =>
  new GatewayError('unavailable', 'the gateway is shutting down: send the request again, on a new connection', { headers: { 'retry-after': '1' } });

/** The status a request is counted and logged with when the client left before any answer (nginx's 499). */
const CLIENT_CLOSED_REQUEST = 499;

const nulInUrl = () => new GatewayError('invalid_request', 'the URL holds a NUL character (%00), which no path or query of this API takes');

/** The HTTP app: the only code that knows the web framework. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const requestIds = new RequestIds();
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // No child logger a request (pino's child() is a measurable share of a request's CPU): the access
    // line names the request itself, and a route adds to it through req.logFields.
    childLoggerFactory: (logger) => logger,
    // Every answer carries X-Request-Id: the client's own when it sent a well-formed one, else a new one.
    requestIdHeader: false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : requestIds.next();
    },
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: Math.floor(deps.config.listen.body_limit_mb * 1024 * 1024),
    trustProxy: deps.config.listen.trust_proxy,
    forceCloseConnections: 'idle',
    // While closing, requests still arriving on open connections are answered 503 by the onRequest
    // hook below, in the contract's shape and with X-Request-Id (Fastify's own 503 has neither).
    return503OnClosing: false,
    // A request the HTTP parser refuses never reaches a route: its answer is written here, in the
    // contract's shape with an X-Request-Id of its own, and the connection closed (as Node does).
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) {
        const e = clientErrorAnswer(err.code);
        const body = JSON.stringify(e.body);
        socket.write(
          `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestIds.next()}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy(err);
    },
    // Errors Fastify raises before routing (a malformed URL) get the same body as every other. Its
    // reply here is typed for no route at all, hence the casts: a marked seam.
    frameworkErrors: (err, req, reply) => {
      const e = toHttpError(err, deps.logger, req.id);
      reply.raw.setHeader('x-request-id', req.id);
      void reply
        .status(e.status as never)
        .headers(e.headers)
        .send(e.body as never);
    },
  });
  // Any body is read as JSON, whatever Content-Type it came with (curl -d sends a form type); an
  // empty one is no body (a DELETE may carry a JSON Content-Type and nothing else).
  // The text is kept (req.rawBody) so that the chat route can pass the body on without serialising it again.
  // A `__proto__` key, or a `constructor` holding a `prototype`, is left out of the parsed body (where
  // an assignment could reach an object's prototype) rather than refusing the body: a JSON schema in
  // response_format may name such a property, and the upstream gets the client's text as it was sent.
  const json = app.getDefaultJsonParser('remove', 'remove');
  app.decorateRequest('rawBody', undefined);
  const parse: Parameters<typeof app.addContentTypeParser>[2] = (req, body, done) => {
    if (body === '' || body === undefined) return done(null, undefined);
    // The text as the client wrote it, without a byte-order mark (the parser drops one too).
    const text = (body as string).charCodeAt(0) === 0xfeff ? (body as string).slice(1) : (body as string);
    req.rawBody = text;
    if (!mayNamePrototypeKeys(text)) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return json(req, body as string, done); // its error, as for any malformed body
      }
      return done(null, value);
    }
    json(req, body as string, done);
  };
  app.removeContentTypeParser(['text/plain', 'application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
  registerErrorHandling(app, deps.logger, deps.metrics);
  // Every route registered from here on that carries its documentation (route-doc.ts) is in the OpenAPI document.
  const documented: DocumentedRoute[] = [];
  app.addHook('onRoute', (route) => {
    const d = route.config?.openapi;
    if (d) for (const method of [route.method].flat()) if (method !== 'HEAD') documented.push({ method, url: route.url, doc: d });
  });
  // Shutdown began (app.close()): Fastify has set `Connection: close` on what still arrives.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // Load balancers' probes: no access-log line and no DDoS count. (/metrics is not one: it takes the
  // admin token, and a guess at it meets the guard and is logged like a guess anywhere else.)
  const probes = new Set(['/health', '/health/ready']);
  app.decorateRequest('logFields', undefined);
  app.decorateRequest('authenticatedKey', undefined);
  // One access-log line a request, streamed or not: method, path (query left out), status, time, and
  // whether the client left before the end. Never a header. Written when the response closes, which
  // it does once whatever happened (Fastify's onResponse also runs for a hijacked, streamed reply, and
  // not at all when the client goes away first). A route adds fields through req.logFields.
  // Then the DDoS guard, before a key is looked up or a body is read. (A callback hook, not an async
  // one: Fastify then waits on no promise of its own, a saving on every request.)
  app.addHook('onRequest', (req, reply, done) => {
    // On the reply, so that it is on every answer: Fastify writes its headers with the head, a
    // hijacked (streamed) reply writes them itself (chat-completions.ts), and the error handler keeps
    // them. Not on the raw response: one header set there sends every other header of the answer
    // through Node's setHeader (validated, lower-cased and stored one by one, ~3,600 instructions each)
    // instead of writeHead's single pass (instructions.mjs, eighteenth session).
    reply.header('x-request-id', req.id);
    if (probes.has(req.url)) return done();
    reply.raw.once('close', () => {
      // A client that left before any answer was sent: no status was ever sent (Node's default 200 is not one).
      const status = reply.raw.headersSent ? reply.raw.statusCode : CLIENT_CLOSED_REQUEST;
      // Chat requests are counted by the model and provider that served them (the route sets both once
      // served), never by a name the client sent, so labels stay few; whatever answered them, this
      // hook's own refusals included.
      if (req.routeOptions.config.countedAsInference) {
        const served = req.logFields?.provider !== undefined;
        deps.metrics.request(served ? String(req.logFields?.model) : '', served ? String(req.logFields?.provider) : '', status);
      }
      const level = status >= 500 ? 'warn' : 'info';
      if (!deps.logger.isLevelEnabled(level)) return; // the line is not built for a level that is off
      const fields = { reqId: req.id, method: req.method, path: req.url.split('?')[0], status, ms: Math.round(reply.elapsedTime), ...req.logFields };
      req.log[level](reply.raw.writableFinished ? fields : { ...fields, client_gone: true }, 'request');
    });
    if (closing) return done(shuttingDown());
    let checked: Awaitable<void>;
    try {
      checked = deps.ddos.check(req.ip);
    } catch (err) {
      return done(err as Error);
    }
    // Past the guard: a NUL character can be in no id, name or search of the gateway's (and PostgreSQL
    // refuses one in text, where SQLite would find nothing).
    const passed = () => done(req.url.includes('%00') ? nulInUrl() : undefined);
    if (isPromise(checked)) checked.then(passed, done);
    else passed();
  });
  // Browser apps of the configured origins may call the API (off unless listen.cors_origins is set).
  // Registered after the hook above, so that a preflight, which the plugin answers in its own hook,
  // has met the DDoS guard and carries X-Request-Id and its access-log line like any request. An
  // OPTIONS request that is no preflight (no Origin) is answered as one too, not with the plugin's
  // text/plain 400.
  const origins = deps.config.listen.cors_origins;
  if (origins.length > 0) {
    void app.register(cors, {
      origin: origins.includes('*') ? '*' : origins,
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'x-generation-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
      maxAge: 600,
      strictPreflight: false,
    });
  }
  registerPublicRoutes(app, deps);
  registerChatRoute(app, deps);
  registerAdminRoutes(app, deps);
  registerMetricsRoute(app, deps);
  registerManagementRoutes(app, deps);
  registerOpenApiRoute(app, deps, documented);
  registerDashboard(app, deps.dashboardDir);
  return app;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's requests are counted in tollgate_requests_total (the chat route). */
    countedAsInference?: boolean;
  }
  interface FastifyRequest {
    /** The body's text as the client sent it (JSON bodies only). */
    rawBody: string | undefined;
    /** Fields a route adds to the request's access-log line. */
    logFields: Record<string, unknown> | undefined;
    /**
     * The key a route's onRequest hook authenticated the request with (a field of the request, not a
     * WeakMap entry a request: those are ephemerons, which every garbage collection has to visit).
     */
    authenticatedKey: KeyRecord | undefined;
  }
}
