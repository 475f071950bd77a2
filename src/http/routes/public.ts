import { keyActivityQuery, keyGenerationsQuery } from '../../admin/report-schemas.js';
import { generationListSchema, keyActivitySchema } from '../dashboard-schemas.js';
import type { FastifyInstance } from 'fastify';
import { keyStatusAnswerSchema, type KeyStatusAnswerJson } from '../../admin/answer-schemas.js';
import { keyStatusView } from '../../admin/views.js';
import { GatewayError, notFound } from '../../errors.js';
import { accountOfKey } from '../../ledger/account-of-key.js';
import { creditsToJson } from '../../ledger/money.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import {
  creditsAnswerSchema,
  generationAnswerSchema,
  healthSchema,
  modelListSchema,
  type CreditsAnswerJson,
  type GenerationAnswerJson,
  type HealthJson,
  type ModelListJson,
} from '../answer-schemas.js';
import { generationQuerySchema } from '../request-schemas.js';
import { doc } from '../route-doc.js';
import { generationView, modelView } from '../views.js';

/** How long a readiness check waits for the ledger. */
const READY_TIMEOUT_MS = 2000;

/** GET /key, /credits, /models, /generation, /health and /health/ready. */
export function registerPublicRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, config, catalog } = deps;
  const modelsCreated = Math.floor(clock.now() / 1000);

  const healthDoc = doc({
    operationId: 'getHealth',
    summary: 'Liveness: the process answers',
    tag: 'operations',
    auth: 'none',
    probe: true,
    responses: { 200: healthSchema },
  });
  app.get('/health', healthDoc, async (): Promise<HealthJson> => ({ status: 'ok' }));

  // Readiness, for load balancers (CONTRACT §8): the ledger answers, within READY_TIMEOUT_MS.
  const ready = doc({
    operationId: 'getReadiness',
    summary: 'Readiness, for load balancers: the ledger and (when configured) Redis answer',
    tag: 'operations',
    auth: 'none',
    probe: true,
    responses: { 200: healthSchema },
    errors: [503],
  });
  app.get('/health/ready', ready, async (): Promise<HealthJson> => {
    for (const probe of deps.readiness) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      });
      try {
        await Promise.race([probe.check(), timeout]);
      } catch (err) {
        deps.logger.warn({ err: (err as Error).message }, `readiness check: ${probe.what} does not answer`);
        throw new GatewayError('unavailable', `not ready: ${probe.what} does not answer`, {
          metadata: { reason: probe.reason },
          headers: { 'retry-after': '1' },
        });
      } finally {
        clearTimeout(timer);
      }
    }
    return { status: 'ok' };
  });

  const either = ['api_key', 'management_key'] as const;
  const keyDoc = doc({
    operationId: 'getCurrentKey',
    summary: "The calling key's limits and usage",
    tag: 'public',
    auth: either,
    responses: { 200: keyStatusAnswerSchema },
  });
  app.get('/api/v1/key', keyDoc, async (req): Promise<KeyStatusAnswerJson> => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const account = await accountOfKey(ledger, key);
    const [money, freeRequestsToday] = await Promise.all([deps.money.keyView(account.id, key.hash), deps.freeRequestsToday(account.id)]);
    return { data: keyStatusView(config, key, money.key, { ...account, balance: money.balance, totalUsage: money.totalUsage }, freeRequestsToday) };
  });

  const creditsDoc = doc({
    operationId: 'getCredits',
    summary: "The account's credits: purchased and used",
    tag: 'public',
    auth: either,
    responses: { 200: creditsAnswerSchema },
  });
  app.get('/api/v1/credits', creditsDoc, async (req): Promise<CreditsAnswerJson> => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const account = await deps.money.account(await accountOfKey(ledger, key));
    return {
      data: {
        total_credits: creditsToJson(account.balance + account.totalUsage),
        total_usage: creditsToJson(account.totalUsage),
      },
    };
  });

  const modelsDoc = doc({
    operationId: 'listModels',
    summary: 'The models served here, with their prices',
    tag: 'public',
    auth: 'none',
    responses: { 200: modelListSchema },
  });
  app.get('/api/v1/models', modelsDoc, async (): Promise<ModelListJson> => {
    const data = catalog.list().map((m) => modelView(m, modelsCreated));
    return { data, links: { next: null }, total_count: data.length };
  });

  const generationsDoc = doc({
    operationId: 'listGenerations',
    summary: "The calling key's latest generations, newest first (a management key: its account's, or one key's)",
    tag: 'public',
    auth: either,
    query: keyGenerationsQuery,
    responses: { 200: generationListSchema },
  });
  // The calling key's latest generations and its spend over time (the dashboard's key holder view):
  // an extension of CONTRACT §5, for any key of the account, each seeing its own only.
  app.get('/api/v1/generations', generationsDoc, async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    return { data: (await deps.reports.keyGenerations(key, req.query)).map(generationView) };
  });

  const keyActivityDoc = doc({
    operationId: 'getKeyActivity',
    summary: "The calling key's spend per UTC day and model over the last 30 days (a management key: its account's)",
    tag: 'public',
    auth: either,
    query: keyActivityQuery,
    responses: { 200: keyActivitySchema },
  });
  app.get('/api/v1/key/activity', keyActivityDoc, async (req) => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    return deps.reports.keyActivity(key, req.query);
  });

  const generationDoc = doc({
    operationId: 'getGeneration',
    summary: 'One request of the account: what served it, its tokens and its cost',
    tag: 'public',
    auth: either,
    query: generationQuerySchema,
    responses: { 200: generationAnswerSchema },
    errors: [404],
  });
  app.get('/api/v1/generation', generationDoc, async (req): Promise<GenerationAnswerJson> => {
    const key = await authenticateKey(req, ledger, clock, 'either');
    const query = generationQuerySchema.safeParse(req.query);
    if (!query.success) throw new GatewayError('invalid_request', 'id: the query parameter "id" is required');
    const { id } = query.data;
    const generation = await ledger.getGeneration(id);
    if (!generation || generation.accountId !== key.accountId) throw notFound(`no generation with id "${id}"`);
    return { data: generationView(generation) };
  });
}
