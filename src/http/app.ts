import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppDeps } from './app-deps.js';
import { registerErrorHandling } from './error-handler.js';
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
  });
  // Any body is read as JSON, whatever Content-Type it came with (curl -d sends a form type).
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));
  registerErrorHandling(app, deps.logger);
  registerPublicRoutes(app, deps);
  registerChatRoute(app, deps);
  registerAdminRoutes(app, deps);
  return app;
}
