import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accountAnswerSchema, deletedSchema, issuedKeyInfoSchema, keyInfoAnswerSchema, keyInfoListSchema } from '../../admin/answer-schemas.js';
import { adminNewKeySchema, byokSchema, creditsSchema, keyPatchSchema, newAccountSchema, rotationSchema } from '../../admin/request-schemas.js';
import { accountPageSchema, accountsQuery, generationPageSchema, generationsQuery, spendQuery, spendReportSchema } from '../../admin/report-schemas.js';
import { notFound } from '../../errors.js';
import { requireAdmin } from '../auth.js';
import { byokListSchema, providerHealthSchema } from '../dashboard-schemas.js';
import { webhookListSchema, webhookTestSchema } from '../webhook-schemas.js';
import type { AppDeps } from '../app-deps.js';
import { withExactMoney } from '../exact-money.js';
import { doc, type RouteDoc } from '../route-doc.js';

type Params = Record<string, string>;

/** An admin route's documentation: behind the admin token. */
const adminDoc = (d: Omit<RouteDoc, 'tag' | 'auth'>) => doc({ ...d, tag: 'admin', auth: 'admin' });
const ACCOUNT = { id: 'The account id (acct_…)' };
const KEY = { hash: "The key's hash (its public id)" };
const BYOK = { ...ACCOUNT, provider: 'A configured provider id' };

const docs = {
  listByok: adminDoc({
    operationId: 'adminListByok',
    summary: 'Which configured providers the account stored its own key for (never the key)',
    params: ACCOUNT,
    responses: { 200: byokListSchema },
    errors: [404],
  }),
  providers: adminDoc({
    operationId: 'adminProviderHealth',
    summary: "Providers' recent error rate, latency and cooldowns, as this process saw them",
    responses: { 200: providerHealthSchema },
  }),
  listWebhooks: adminDoc({
    operationId: 'adminListWebhooks',
    summary: 'The alert webhooks (config alerts.webhooks) and their deliveries in this process; never a secret',
    responses: { 200: webhookListSchema },
  }),
  testWebhook: adminDoc({
    operationId: 'adminTestWebhook',
    summary: 'Send a test event to a webhook now (one attempt) and say whether the receiver took it',
    params: { id: "The webhook's id" },
    responses: { 200: webhookTestSchema },
    errors: [404],
  }),
  listAccounts: adminDoc({
    operationId: 'adminListAccounts',
    summary: 'Accounts, oldest first, a page at a time; search matches names',
    query: accountsQuery,
    responses: { 200: accountPageSchema },
  }),
  listGenerations: adminDoc({
    operationId: 'adminListGenerations',
    summary: "An account's generations, newest first, filtered by key, model, status and time, a page at a time",
    params: ACCOUNT,
    query: generationsQuery,
    responses: { 200: generationPageSchema },
    errors: [404],
  }),
  spendReport: adminDoc({
    operationId: 'adminSpendReport',
    summary: 'Spend, requests and tokens per hour or UTC day and per account, key, model or provider, from the rollups',
    query: spendQuery,
    responses: { 200: spendReportSchema },
  }),
  createAccount: adminDoc({ operationId: 'adminCreateAccount', summary: 'Create an account', body: newAccountSchema, responses: { 201: accountAnswerSchema } }),
  getAccount: adminDoc({ operationId: 'adminGetAccount', summary: 'An account', params: ACCOUNT, responses: { 200: accountAnswerSchema }, errors: [404] }),
  addCredits: adminDoc({
    operationId: 'adminAddCredits',
    summary: 'Add credits to an account (a purchase, or an adjustment of either sign)',
    params: ACCOUNT,
    body: creditsSchema,
    responses: { 200: accountAnswerSchema },
    errors: [404],
  }),
  createKey: adminDoc({
    operationId: 'adminCreateKey',
    summary: 'Create a key for an account (an inference key, or a management key); its secret is shown once, here',
    params: ACCOUNT,
    body: adminNewKeySchema,
    responses: { 201: issuedKeyInfoSchema },
    errors: [404],
  }),
  listKeys: adminDoc({ operationId: 'adminListKeys', summary: "An account's keys", params: ACCOUNT, responses: { 200: keyInfoListSchema }, errors: [404] }),
  patchKey: adminDoc({
    operationId: 'adminUpdateKey',
    summary: 'Change a key',
    params: KEY,
    body: keyPatchSchema,
    responses: { 200: keyInfoAnswerSchema },
    errors: [404],
  }),
  rotateKey: adminDoc({
    operationId: 'adminRotateKey',
    summary: 'A new secret for a key (same hash, usage and limits), shown once; the old one works grace_seconds more',
    params: KEY,
    body: rotationSchema,
    responses: { 200: issuedKeyInfoSchema },
    errors: [404],
  }),
  deleteKey: adminDoc({
    operationId: 'adminDeleteKey',
    summary: 'Delete a key (its generations and spend are kept)',
    params: KEY,
    responses: { 200: deletedSchema },
    errors: [404],
  }),
  putByok: adminDoc({
    operationId: 'adminPutByokKey',
    summary: "Store the account's own key for a provider (BYOK); it is never returned",
    params: BYOK,
    body: byokSchema,
    responses: { 204: { description: 'Stored' } },
    errors: [404],
  }),
  deleteByok: adminDoc({
    operationId: 'adminDeleteByokKey',
    summary: "Remove the account's own key for a provider",
    params: BYOK,
    responses: { 204: { description: 'Removed' } },
    errors: [404],
  }),
};

/** The admin API (CONTRACT §4), behind the admin token. */
export function registerAdminRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { admin, adminToken } = deps;
  const guard = async (req: FastifyRequest) => requireAdmin(req, adminToken);
  const p = (req: FastifyRequest) => req.params as Params;

  app.register(async (scope) => {
    scope.addHook('onRequest', guard);
    // Money fields as the client wrote them, not as the nearest double (exact-money.ts).
    scope.addHook('preHandler', async (req) => {
      req.body = withExactMoney(req.body, req.rawBody);
    });

    scope.post('/api/v1/admin/accounts', docs.createAccount, async (req, reply) => reply.code(201).send({ data: await admin.createAccount(req.body) }));
    scope.get('/api/v1/admin/accounts', docs.listAccounts, async (req) => deps.reports.accounts(req.query));
    scope.get('/api/v1/admin/accounts/:id/generations', docs.listGenerations, async (req) => deps.reports.generations(p(req).id as string, req.query));
    scope.get('/api/v1/admin/reports/spend', docs.spendReport, async (req) => deps.reports.spend(req.query));
    scope.get('/api/v1/admin/accounts/:id', docs.getAccount, async (req) => ({ data: await admin.getAccount(p(req).id as string) }));
    scope.post('/api/v1/admin/accounts/:id/credits', docs.addCredits, async (req) => ({ data: await admin.addCredits(p(req).id as string, req.body) }));
    scope.post('/api/v1/admin/accounts/:id/keys', docs.createKey, async (req, reply) =>
      reply.code(201).send(await admin.createKey(p(req).id as string, req.body)),
    );
    scope.get('/api/v1/admin/accounts/:id/keys', docs.listKeys, async (req) => ({ data: await admin.listKeys(p(req).id as string) }));
    scope.patch('/api/v1/admin/keys/:hash', docs.patchKey, async (req) => ({ data: await admin.patchKey(p(req).hash as string, req.body) }));
    scope.post('/api/v1/admin/keys/:hash/rotate', docs.rotateKey, async (req) => admin.rotateKey(p(req).hash as string, req.body));
    scope.delete('/api/v1/admin/keys/:hash', docs.deleteKey, async (req) => admin.deleteKey(p(req).hash as string));
    scope.get('/api/v1/admin/accounts/:id/byok', docs.listByok, async (req) => ({ data: await admin.listByok(p(req).id as string) }));
    scope.get('/api/v1/admin/providers', docs.providers, async () => deps.providerHealth());
    scope.put('/api/v1/admin/accounts/:id/byok/:provider', docs.putByok, async (req, reply) => {
      await admin.putByok(p(req).id as string, p(req).provider as string, req.body);
      return reply.code(204).send();
    });
    scope.get('/api/v1/admin/webhooks', docs.listWebhooks, async () => ({ data: deps.webhooks.list() }));
    scope.post('/api/v1/admin/webhooks/:id/test', docs.testWebhook, async (req) => {
      const result = await deps.webhooks.test(p(req).id as string);
      if (!result) throw notFound(`no webhook with id "${p(req).id as string}"`);
      return { data: result };
    });
    scope.delete('/api/v1/admin/accounts/:id/byok/:provider', docs.deleteByok, async (req, reply) => {
      await admin.deleteByok(p(req).id as string, p(req).provider as string);
      return reply.code(204).send();
    });
  });
}
