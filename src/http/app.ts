import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppDeps } from './app-deps.js';
import { registerErrorHandling, toHttpError } from './error-handler.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoute } from './routes/chat-completions.js';
import { registerPublicRoutes } from './routes/public.js';

/** The HTTP app: the only code that knows the web framework. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: Math.floor(deps.config.listen.body_limit_mb * 1024 * 1024),
    trustProxy: deps.config.listen.trust_proxy,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // Errors Fastify raises before routing (a malformed URL) get the same body as every other. Its
    // reply here is typed for no route at all, hence the casts: a marked seam.
    frameworkErrors: (err, _req, reply) => {
      const e = toHttpError(err, deps.logger);
      void reply
        .status(e.status as never)
        .headers(e.headers)
        .send(e.body as never);
    },
  });
  // Any body is read as JSON, whatever Content-Type it came with (curl -d sends a form type); an
  // empty one is no body (a DELETE may carry a JSON Content-Type and nothing else).
  const json = app.getDefaultJsonParser('error', 'error');
  const parse: Parameters<typeof app.addContentTypeParser>[2] = (req, body, done) =>
    body === '' || body === undefined ? done(null, undefined) : json(req, body as string, done);
  app.removeContentTypeParser(['text/plain', 'application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
  registerErrorHandling(app, deps.logger);
  // The DDoS guard runs first, before a key is looked up or a body is read.
  app.addHook('onRequest', async (req) => {
    if (req.url !== '/health') await deps.ddos.check(req.ip);
  });
  // One access-log line a request: method, path (query left out), status, time. Never a header.
  app.addHook('onResponse', async (req, reply) => {
    if (req.url === '/health') return;
    req.log.info({ method: req.method, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  registerPublicRoutes(app, deps);
  registerChatRoute(app, deps);
  registerAdminRoutes(app, deps);
  return app;
}
