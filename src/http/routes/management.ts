import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyRecord } from '../../ledger/ledger.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';

type Params = Record<string, string>;

/** The self-service management API (CONTRACT §9), behind a management key, for its own account. */
export function registerManagementRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, management } = deps;
  const owners = new WeakMap<FastifyRequest, KeyRecord>();
  const owner = (req: FastifyRequest) => owners.get(req) as KeyRecord;
  const hash = (req: FastifyRequest) => (req.params as Params).hash as string;

  app.register(async (scope) => {
    // The key is checked before the body is read: a request without a management key is a 401 whatever it carries.
    scope.addHook('onRequest', async (req) => {
      owners.set(req, await authenticateKey(req, ledger, clock, 'management'));
    });

    scope.get('/api/v1/keys', async (req) => management.list(owner(req), req.query));
    scope.post('/api/v1/keys', async (req, reply) => reply.code(201).send(await management.create(owner(req), req.body)));
    scope.get('/api/v1/keys/:hash', async (req) => management.get(owner(req), hash(req)));
    scope.patch('/api/v1/keys/:hash', async (req) => management.update(owner(req), hash(req), req.body));
    scope.delete('/api/v1/keys/:hash', async (req) => management.delete(owner(req), hash(req)));
    scope.post('/api/v1/keys/:hash/rotate', async (req) => management.rotate(owner(req), hash(req), req.body));
    scope.get('/api/v1/activity', async (req) => deps.reports.activity(owner(req), req.query));
  });
}
