import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app-deps.js';
import { requireToken } from '../auth.js';
import { doc } from '../route-doc.js';

const metricsDoc = doc({
  operationId: 'getMetrics',
  summary: "The gateway's metrics, in Prometheus' text format",
  tag: 'operations',
  auth: ['admin', 'metrics_token'],
  probe: true,
  responses: { 200: { text: "Prometheus' text exposition format" } },
});

/** GET /metrics (CONTRACT §10): Prometheus' text format, for the admin token or `metrics.token`. */
export function registerMetricsRoute(app: FastifyInstance, deps: AppDeps): void {
  const tokens = [deps.adminToken, deps.config.metrics.token].filter((t): t is string => t !== undefined);
  app.get('/metrics', metricsDoc, async (req, reply) => {
    requireToken(req, tokens, '/metrics needs "Authorization: Bearer <admin_token or metrics.token>"');
    const { text, contentType } = await deps.scrapeMetrics();
    return reply.type(contentType).send(text);
  });
}
