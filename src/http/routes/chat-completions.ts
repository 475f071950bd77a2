import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { chatCompletionChunkSchema, chatCompletionSchema } from '../../chat/answer-schemas.js';
import type { Started } from '../../chat/chat-service.js';
import { chatRequestSchema } from '../../chat/request-schema.js';
import { triedProviders } from '../../routing/route.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import { doc } from '../route-doc.js';
import { endFailedStream, writeSse } from '../sse.js';
import { Cancellation } from '../../cancellation.js';
import { isPromise, type Awaitable } from '../../awaitable.js';
import { toHttpError, whyFailed } from '../error-handler.js';
import type { KeyRecord } from '../../ledger/ledger.js';

/** The model a request named, for its log line (what the client sent, cut short). */
function requestedModel(body: unknown): string | undefined {
  const model = body !== null && typeof body === 'object' ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model.slice(0, 200) : undefined;
}

/** POST /api/v1/chat/completions: OpenAI's API with OpenRouter's routing fields. */
export function registerChatRoute(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, chat, inflight, config } = deps;

  // The key is checked before the body is read (CONTRACT §6: DDoS guard, then key), so a bad key
  // is a 401 whatever the body holds. From here on every answer is counted, and the log line names
  // the key and its account, whatever refuses the request (a body that cannot be read too).
  const onRequest = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    let key: Awaitable<KeyRecord>;
    try {
      key = authenticateKey(req, ledger, clock, 'inference');
    } catch (err) {
      done(err as Error);
      return;
    }
    if (isPromise(key)) {
      key.then((k) => {
        accept(req, k);
        done();
      }, done);
      return;
    }
    accept(req, key);
    done();
  };
  /** The request's key, and its log line's first fields (`model` too, so that the route sets it in place). */
  const accept = (req: FastifyRequest, k: KeyRecord) => {
    req.authenticatedKey = k;
    req.logFields = { key_label: k.label, account: k.accountId, model: undefined };
  };

  // Documentation only (route-doc.ts): nothing validates or serialises this route's answers with these schemas.
  const documented = doc({
    operationId: 'createChatCompletion',
    summary: "A chat completion: OpenAI's API with OpenRouter's routing fields, charged to the key's account",
    tag: 'public',
    auth: 'api_key',
    body: chatRequestSchema,
    bodyExample: { model: deps.catalog.list()[0]?.id ?? 'MODEL', messages: [{ role: 'user', content: 'Hello' }] },
    responses: {
      200: {
        description: 'The answer: JSON, or server-sent events when the request set "stream": true (a mid-stream failure is an event with "error")',
        json: chatCompletionSchema,
        sse: chatCompletionChunkSchema,
        headers: { 'X-Generation-Id': 'The generation id (gen-…), for GET /api/v1/generation' },
      },
    },
    errors: [402, 422, 429, 502, 503],
  });
  // Counted in tollgate_requests_total when the response is over (app.ts), whatever answered it.
  const routeConfig = { ...documented.config, countedAsInference: true };
  app.post('/api/v1/chat/completions', { onRequest, config: routeConfig }, async (req, reply) => {
    const key = req.authenticatedKey ?? (await authenticateKey(req, ledger, clock, 'inference'));
    // The access line (app.ts) names the key, the account and the model, and why a request failed.
    const log: Record<string, unknown> = req.logFields ?? { key_label: key.label, account: key.accountId };
    log.model = requestedModel(req.body);
    req.logFields = log;
    let started: Started | undefined;
    const controller = new Cancellation();
    // The response is over: if the client went away before the answer was complete, the upstream
    // call is cancelled.
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort();
    });
    // The request deadline: past it the request is cancelled like a client that went away (it settles,
    // charged for what was delivered, and its holds end with it).
    const deadline = clock.schedule(config.limits.request_deadline_ms, () =>
      controller.abort(new DOMException(`the request ran past its deadline (${config.limits.request_deadline_ms} ms)`, 'TimeoutError')),
    );
    inflight.add(controller);
    let hijacked = false;
    try {
      started = await chat.start(key, req.body, controller.signal, req.rawBody);
      const { served, routed } = started;
      log.generation = served.id;
      log.stream = routed.answer.kind === 'stream';
      log.model = served.model;
      log.provider = served.provider;
      if (routed.failures.length > 0) log.fallbacks = triedProviders(routed.failures);
      const headers = { 'x-generation-id': served.id };
      if (routed.answer.kind === 'json') {
        return reply
          .headers(headers)
          .type('application/json; charset=utf-8')
          .send(await chat.complete(started));
      }
      reply.hijack();
      hijacked = true;
      // A hijacked reply writes its own head: the headers hooks set on the reply (CORS) go with it.
      const hooked = Object.fromEntries(Object.entries(reply.getHeaders()).map(([k, v]) => [k, String(v)]));
      await writeSse(reply.raw, { ...hooked, ...headers }, chat.relay(started, controller.signal), controller.signal);
      // A stream the upstream failed midway ended with the error event, status 200: its line says so.
      const failure = started.streamFailure;
      if (failure) {
        log.error = failure.kind === 'rate_limited' ? 'upstream_rate_limited' : 'upstream_failed';
        log.providers = triedProviders([{ attempt: routed.attempt, failure }]);
      }
      return reply;
    } catch (err) {
      Object.assign(log, whyFailed(err)); // a streamed answer's error does not reach the error handler
      if (!hijacked) throw err;
      // Fastify answers nothing for a reply taken over: the upstream call is cancelled, the client answered here.
      controller.abort();
      endFailedStream(reply.raw, toHttpError(err, deps.logger, req.id), req.id);
      return reply;
    } finally {
      // Every path settles; one that ended before any output (the client gone first) releases its holds.
      if (started && !started.settlement.settled) started.settlement.settleNothing();
      deadline.cancel();
      inflight.delete(controller);
    }
  });
}
