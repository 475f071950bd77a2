import { RequestIds, requestIdOf } from './request-ids.js';
import { createServer, STATUS_CODES, type IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerFactory } from 'fastify';
import type { AppDeps } from './app-deps.js';
import type { KeyRecord } from '../ledger/ledger.js';
import { isPromise, type Awaitable } from '../awaitable.js';
import { registerDashboard } from './dashboard.js';
import { clientErrorAnswer, registerErrorHandling, toHttpError } from './error-handler.js';
import { registerAdminRoutes } from './routes/admin.js';
import { CHAT_COMPLETIONS_PATH, chatCompletionsDoc, chatCompletionsRoute, isChatCompletion } from './routes/chat-completions.js';
import { registerMetricsRoute } from './routes/metrics.js';
import { registerManagementRoutes } from './routes/management.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { registerPublicRoutes } from './routes/public.js';
import type { DocumentedRoute } from './openapi-document.js';
import { closedStatus, writeAccessLine } from './access-line.js';
import { CORS_RULES, corsHeaders } from './cors-headers.js';
import { parseRequestBody } from './request-body.js';
import { requestGuard } from './request-guard.js';

/** The client's address: the connection's, or with listen.trust_proxy the first of X-Forwarded-For (the call Fastify makes for req.ip). */
function clientIpOf(trustProxy: boolean): (req: IncomingMessage) => string {
  const trustAll = () => true;
  return trustProxy ? (req) => proxyAddr(req, trustAll) ?? '' : (req) => req.socket.remoteAddress ?? '';
}

/**
 * The HTTP app: the only code that knows the web framework. Every route is Fastify's but the chat
 * route, which the server hands to routes/chat-completions.ts on node:http before Fastify sees the
 * request (why, and what it does in Fastify's stead: that file).
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const requestIds = new RequestIds();
  // Shutdown began (app.close()): Fastify has set `Connection: close` on what still arrives.
  let closing = false;
  const guard = requestGuard(deps.ddos, () => closing);
  const chat = chatCompletionsRoute(deps, {
    requestIds,
    closing: () => closing,
    guard,
    clientIp: clientIpOf(deps.config.listen.trust_proxy),
    cors: corsHeaders(deps.config.listen.cors_origins),
  });
  // The server Fastify would make (its timeouts from its own options), the chat route taken first.
  const serverFactory: FastifyServerFactory = (handler, options) => {
    const server = createServer((req, res) => (isChatCompletion(req) ? chat(req, res) : handler(req, res)));
    server.keepAliveTimeout = options.keepAliveTimeout as number;
    server.requestTimeout = options.requestTimeout as number;
    server.setTimeout(options.connectionTimeout as number);
    if ((options.maxRequestsPerSocket as number) > 0) server.maxRequestsPerSocket = options.maxRequestsPerSocket as number;
    return server;
  };
  const app = Fastify({
    serverFactory,
    loggerInstance: deps.logger as FastifyBaseLogger,
    // No child logger a request (pino's child() is a measurable share of a request's CPU): the access
    // line names the request itself, and a route adds to it through req.logFields.
    childLoggerFactory: (logger) => logger,
    // Every answer carries X-Request-Id: the client's own when it sent a well-formed one, else a new one.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers['x-request-id'], requestIds),
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
  // Any body is read as JSON, whatever Content-Type it came with (request-body.ts, as the chat route
  // reads its own). The text is kept (req.rawBody) for the routes that read exact amounts from it.
  app.decorateRequest('rawBody', undefined);
  const parse: Parameters<typeof app.addContentTypeParser>[2] = (req, body, done) => {
    let parsed;
    try {
      parsed = parseRequestBody((body as string | undefined) ?? '');
    } catch (err) {
      return done(err as Error, undefined);
    }
    req.rawBody = parsed.text;
    done(null, parsed.value);
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
  // Then the request guard (request-guard.ts), before a key is looked up or a body is read. (A callback hook, not an async
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
      const line = { reqId: req.id, method: req.method, url: req.url, status: closedStatus(reply.raw), ms: reply.elapsedTime, fields: req.logFields };
      writeAccessLine(deps.logger, reply.raw, line);
    });
    let checked: Awaitable<void>;
    try {
      checked = guard(req.ip, req.url);
    } catch (err) {
      return done(err as Error);
    }
    if (isPromise(checked)) checked.then(() => done(), done);
    else done();
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
      methods: [...CORS_RULES.methods],
      allowedHeaders: [...CORS_RULES.allowedHeaders],
      exposedHeaders: [...CORS_RULES.exposedHeaders],
      maxAge: CORS_RULES.maxAge,
      strictPreflight: false,
    });
  }
  registerPublicRoutes(app, deps);
  // Served before Fastify (serverFactory above), documented with the others.
  documented.push({ method: 'POST', url: CHAT_COMPLETIONS_PATH, doc: chatCompletionsDoc(deps) });
  registerAdminRoutes(app, deps);
  registerMetricsRoute(app, deps);
  registerManagementRoutes(app, deps);
  registerOpenApiRoute(app, deps, documented);
  registerDashboard(app, deps.dashboardDir);
  return app;
}

declare module 'fastify' {
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
