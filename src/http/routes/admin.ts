import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireAdmin } from '../auth.js';
import type { AppDeps } from '../app-deps.js';

type Params = Record<string, string>;

/** The admin API (CONTRACT §4), behind the admin token. */
export function registerAdminRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { admin, adminToken } = deps;
  const guard = async (req: FastifyRequest) => requireAdmin(req, adminToken);
  const p = (req: FastifyRequest) => req.params as Params;

  app.register(async (scope) => {
    scope.addHook('onRequest', guard);

    scope.post('/api/v1/admin/accounts', async (req, reply) => reply.code(201).send({ data: await admin.createAccount(req.body) }));
    scope.get('/api/v1/admin/accounts', async (req) => deps.reports.accounts(req.query));
    scope.get('/api/v1/admin/accounts/:id', async (req) => ({ data: await admin.getAccount(p(req).id as string) }));
    scope.get('/api/v1/admin/accounts/:id/generations', async (req) => deps.reports.generations(p(req).id as string, req.query));
    scope.get('/api/v1/admin/reports/spend', async (req) => deps.reports.spend(req.query));
    scope.post('/api/v1/admin/accounts/:id/credits', async (req) => ({ data: await admin.addCredits(p(req).id as string, req.body) }));
    scope.post('/api/v1/admin/accounts/:id/keys', async (req, reply) => reply.code(201).send(await admin.createKey(p(req).id as string, req.body)));
    scope.get('/api/v1/admin/accounts/:id/keys', async (req) => ({ data: await admin.listKeys(p(req).id as string) }));
    scope.patch('/api/v1/admin/keys/:hash', async (req) => ({ data: await admin.patchKey(p(req).hash as string, req.body) }));
    scope.post('/api/v1/admin/keys/:hash/rotate', async (req) => admin.rotateKey(p(req).hash as string, req.body));
    scope.delete('/api/v1/admin/keys/:hash', async (req) => admin.deleteKey(p(req).hash as string));
    scope.get('/api/v1/admin/accounts/:id/byok', async (req) => ({ data: await admin.listByok(p(req).id as string) }));
    scope.get('/api/v1/admin/providers', async () => deps.providerHealth());
    scope.put('/api/v1/admin/accounts/:id/byok/:provider', async (req, reply) => {
      await admin.putByok(p(req).id as string, p(req).provider as string, req.body);
      return reply.code(204).send();
    });
    scope.delete('/api/v1/admin/accounts/:id/byok/:provider', async (req, reply) => {
      await admin.deleteByok(p(req).id as string, p(req).provider as string);
      return reply.code(204).send();
    });
  });
}
