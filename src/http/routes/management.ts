import { activityAnswerSchema, activityQuery } from '../../admin/report-schemas.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { deletedSchema, issuedManagedKeySchema, managedKeyAnswerSchema, managedKeyListSchema } from '../../admin/answer-schemas.js';
import { keyPatchSchema, keysListQuerySchema, ownerNewKeySchema, rotationSchema } from '../../admin/request-schemas.js';
import type { KeyRecord } from '../../ledger/ledger.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import { withExactMoney } from '../exact-money.js';
import { doc, type RouteDoc } from '../route-doc.js';

type Params = Record<string, string>;

/** A management route's documentation: behind a management key, for its own account. */
const managementDoc = (d: Omit<RouteDoc, 'tag' | 'auth'>) => doc({ ...d, tag: 'management', auth: 'management_key' });
const KEY = { hash: "The key's hash (its public id); another account's is 404" };

const docs = {
  activity: managementDoc({
    operationId: 'getUserActivity',
    summary: "The account's spend per UTC day, model and provider over the last 30 days",
    query: activityQuery,
    responses: { 200: activityAnswerSchema },
  }),
  list: managementDoc({
    operationId: 'listKeys',
    summary: "A page of the account's inference keys (100 a page), oldest first",
    query: keysListQuerySchema,
    responses: { 200: managedKeyListSchema },
  }),
  create: managementDoc({
    operationId: 'createKey',
    summary: 'Create an inference key; its secret is shown once, here',
    body: ownerNewKeySchema,
    responses: { 201: issuedManagedKeySchema },
  }),
  get: managementDoc({ operationId: 'getKey', summary: "One of the account's keys", params: KEY, responses: { 200: managedKeyAnswerSchema }, errors: [404] }),
  update: managementDoc({
    operationId: 'updateKey',
    summary: 'Change a key',
    params: KEY,
    body: keyPatchSchema,
    responses: { 200: managedKeyAnswerSchema },
    errors: [404],
  }),
  delete: managementDoc({
    operationId: 'deleteKey',
    summary: 'Delete a key (its generations and spend are kept)',
    params: KEY,
    responses: { 200: deletedSchema },
    errors: [404],
  }),
  rotate: managementDoc({
    operationId: 'rotateKey',
    summary: 'A new secret for a key (same hash, usage and limits), shown once; the old one works grace_seconds more',
    params: KEY,
    body: rotationSchema,
    responses: { 200: issuedManagedKeySchema },
    errors: [404],
  }),
};

/** The self-service management API (CONTRACT §9), behind a management key, for its own account. */
export function registerManagementRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, management } = deps;
  const owner = (req: FastifyRequest) => req.authenticatedKey as KeyRecord;
  const hash = (req: FastifyRequest) => (req.params as Params).hash as string;

  app.register(async (scope) => {
    // The key is checked before the body is read: a request without a management key is a 401 whatever it carries.
    scope.addHook('onRequest', async (req) => {
      req.authenticatedKey = await authenticateKey(req, ledger, clock, 'management');
    });
    // Money fields as the client wrote them, not as the nearest double (exact-money.ts).
    scope.addHook('preHandler', async (req) => {
      req.body = withExactMoney(req.body, req.rawBody);
    });

    scope.get('/api/v1/keys', docs.list, async (req) => management.list(owner(req), req.query));
    scope.post('/api/v1/keys', docs.create, async (req, reply) => reply.code(201).send(await management.create(owner(req), req.body)));
    scope.get('/api/v1/keys/:hash', docs.get, async (req) => management.get(owner(req), hash(req)));
    scope.patch('/api/v1/keys/:hash', docs.update, async (req) => management.update(owner(req), hash(req), req.body));
    scope.delete('/api/v1/keys/:hash', docs.delete, async (req) => management.delete(owner(req), hash(req)));
    scope.post('/api/v1/keys/:hash/rotate', docs.rotate, async (req) => management.rotate(owner(req), hash(req), req.body));
    scope.get('/api/v1/activity', docs.activity, async (req) => deps.reports.activity(owner(req), req.query));
  });
}
