import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppDeps } from '../app-deps.js';
import { gatewayVersion } from '../gateway-version.js';
import { openApiDocument, type DocumentedRoute } from '../openapi-document.js';
import { doc } from '../route-doc.js';

const documentSchema = z.record(z.string(), z.unknown()).meta({ description: 'This document (OpenAPI 3.1)' });

/**
 * GET /api/v1/openapi.json (CONTRACT §10): the OpenAPI document of every documented route in
 * `routes` (filled as routes are registered), built on the first request and kept.
 */
export function registerOpenApiRoute(app: FastifyInstance, deps: AppDeps, routes: readonly DocumentedRoute[]): void {
  let text: string | undefined;
  app.get(
    '/api/v1/openapi.json',
    doc({ operationId: 'getOpenApiDocument', summary: 'This OpenAPI document', tag: 'operations', auth: 'none', responses: { 200: documentSchema } }),
    async (_req, reply) => {
      text ??= JSON.stringify(openApiDocument(routes, { version: gatewayVersion(), models: deps.catalog.list().map((m) => m.id) }));
      return reply.type('application/json; charset=utf-8').send(text);
    },
  );
}
