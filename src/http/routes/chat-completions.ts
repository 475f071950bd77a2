// Imported: globalThis's Buffer and performance are getters, called on every use (bench/README.md, thirty-fifth session).
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { chatCompletionChunkSchema, chatCompletionSchema } from '../../chat/answer-schemas.js';
import type { Started } from '../../chat/chat-service.js';
import { chatRequestSchema } from '../../chat/request-schema.js';
import { triedProviders } from '../../routing/route.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import { doc, type RouteDoc } from '../route-doc.js';
import { endFailedStream, writeSse } from '../sse.js';
import { Cancellation } from '../../cancellation.js';
import { isPromise, type Awaitable } from '../../awaitable.js';
import { errorAnswer, toHttpError, whyFailed } from '../error-handler.js';
import type { KeyRecord } from '../../ledger/ledger.js';
import { closedStatus, writeAccessLine } from '../access-line.js';
import { RequestBodies, type RequestBody } from '../request-body.js';
import { requestIdOf, type RequestIds } from '../request-ids.js';
import { encodingFor } from '../../utf8-bytes.js';

export const CHAT_COMPLETIONS_PATH = '/api/v1/chat/completions';

/** Whether a request is the chat route's: a POST to its path, with or without a query. */
export function isChatCompletion(req: IncomingMessage): boolean {
  if (req.method !== 'POST') return false;
  const url = req.url;
  const n = CHAT_COMPLETIONS_PATH.length;
  return url !== undefined && url.startsWith(CHAT_COMPLETIONS_PATH) && (url.length === n || url.charCodeAt(n) === 0x3f); // '?'
}

/** What the HTTP app shares with a route it serves on node:http itself, outside the web framework (app.ts). */
export interface NodeRouteContext {
  requestIds: RequestIds;
  /** Whether the gateway is shutting down (what arrives meanwhile goes on a connection closed after it). */
  closing(): boolean;
  /** What every request meets before its route (request-guard.ts). */
  guard(ip: string, url: string): Awaitable<void>;
  /** The client's address, as the framework reads it (listen.trust_proxy). */
  clientIp(req: IncomingMessage): string;
  /** The CORS headers of a request (cors-headers.ts); undefined while CORS is off. */
  cors: ((origin: string | undefined) => Record<string, string>) | undefined;
}

/**
 * A chat request's access-line fields, all there from the start (an object that gains properties one
 * by one changes its shape each time): a field left undefined is left out of the line.
 */
interface ChatLogFields extends Record<string, unknown> {
  key_label: string;
  account: string;
  model: string | undefined;
  generation: string | undefined;
  stream: boolean | undefined;
  provider: string | undefined;
}

function logFields(key: KeyRecord): ChatLogFields {
  return { key_label: key.label, account: key.accountId, model: undefined, generation: undefined, stream: undefined, provider: undefined };
}

/** The model a request named, for its log line (what the client sent, cut short). */
function requestedModel(body: unknown): string | undefined {
  const model = body !== null && typeof body === 'object' ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model.slice(0, 200) : undefined;
}

/** The chat route's documentation (route-doc.ts): nothing validates or serialises its answers with these schemas. */
export function chatCompletionsDoc(deps: AppDeps): RouteDoc {
  return doc({
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
  }).config.openapi;
}

/**
 * POST /api/v1/chat/completions: OpenAI's API with OpenRouter's routing fields. Served on node:http
 * itself, not through the web framework: every answer of the gateway's is one of these, and the
 * framework's request and reply objects, hooks and body parsing cost a fifth of what the gateway adds
 * to a request (bench/README.md). It answers as the framework's routes do (request id, access line,
 * DDoS guard, CORS, the body's limits and errors, errors through error-handler.ts), in CONTRACT §6's
 * order: the DDoS guard, then the key, before the body is read, so that a bad key is a 401 whatever
 * the body holds.
 */
export function chatCompletionsRoute(deps: AppDeps, context: NodeRouteContext): (req: IncomingMessage, res: ServerResponse) => void {
  const { ledger, clock, chat, inflight, config, logger, metrics } = deps;
  const bodies = new RequestBodies(Math.floor(config.listen.body_limit_mb * 1024 * 1024));

  /** One request, from its arrival to its answer. Its objects keep one shape throughout (no property added later). */
  class ChatExchange {
    private readonly arrived = performance.now();
    readonly reqId: string;
    /** The CORS headers, once past the guard (every answer from then on carries them). */
    private cors: Record<string, string> | undefined = undefined;
    /** The access line's fields (the key, the account, the model, why it failed), from the key on. */
    log: ChatLogFields | undefined = undefined;
    /** Cancels the upstream call when the response closes before it was complete (the client left). */
    private controller: Cancellation | undefined = undefined;

    constructor(
      private readonly req: IncomingMessage,
      private readonly res: ServerResponse,
    ) {
      this.reqId = requestIdOf(req.headers['x-request-id'], context.requestIds);
      res.once('close', () => this.closed());
    }

    /**
     * The response is over. Counted by the model and provider that served it (set once served), never
     * by a name the client sent, so labels stay few; whatever answered it, the guard's refusals included.
     */
    private closed(): void {
      const res = this.res;
      if (this.controller && !res.writableFinished) this.controller.abort();
      const status = closedStatus(res);
      const log = this.log;
      const served = log?.provider !== undefined;
      metrics.request(served ? String(log?.model) : '', served ? String(log?.provider) : '', status);
      writeAccessLine(logger, res, {
        reqId: this.reqId,
        method: this.req.method,
        url: this.req.url,
        status,
        ms: performance.now() - this.arrived,
        fields: log,
      });
    }

    /** The headers of an answer: X-Request-Id, the CORS headers, then `own`. */
    private headers(own: Record<string, string>): Record<string, string> {
      return this.cors === undefined ? { 'x-request-id': this.reqId, ...own } : { 'x-request-id': this.reqId, ...this.cors, ...own };
    }

    /**
     * Runs `step`, then `next` with what it answered: at once when it answers at once, else once it
     * settles. A failure of `step` is answered (fail); one of `next` once it settled too (broke).
     */
    private then<T>(step: () => Awaitable<T>, next: (value: T) => unknown): void {
      let value: Awaitable<T>;
      try {
        value = step();
      } catch (err) {
        return this.fail(err);
      }
      if (!isPromise(value)) {
        const after = next(value);
        if (after instanceof Promise) after.catch((err: unknown) => this.broke(err));
        return;
      }
      value
        .then(
          (v) => next(v),
          (err: unknown) => this.fail(err),
        )
        .catch((err: unknown) => this.broke(err));
    }

    start(): void {
      // As the framework does for what still arrives on open connections while it closes.
      if (context.closing()) this.res.setHeader('connection', 'close');
      this.then(
        () => context.guard(context.clientIp(this.req), this.req.url ?? ''),
        () => this.guarded(),
      );
    }

    /** Past the guard: the CORS headers, then the key. */
    private guarded(): void {
      if (context.cors) this.cors = context.cors(this.req.headers.origin);
      this.then(
        () => authenticateKey(this.req, ledger, clock, 'inference'),
        (key) => this.authenticated(key),
      );
    }

    /** The key is good: from here on the log line names it and its account, whatever refuses the request. */
    private authenticated(key: KeyRecord): void {
      this.log = logFields(key);
      this.then(
        () => bodies.read(this.req),
        (body) => this.serve(key, body),
      );
    }

    /** The route itself. Every path settles; each failure is answered once. */
    private async serve(key: KeyRecord, body: RequestBody): Promise<void> {
      const res = this.res;
      const log = this.log as ChatLogFields;
      log.model = requestedModel(body.value);
      let started: Started | undefined;
      const controller = new Cancellation();
      this.controller = controller;
      // The request deadline: past it the request is cancelled like a client that went away (it settles,
      // charged for what was delivered, and its holds end with it).
      const deadline = clock.schedule(config.limits.request_deadline_ms, () =>
        controller.abort(new DOMException(`the request ran past its deadline (${config.limits.request_deadline_ms} ms)`, 'TimeoutError')),
      );
      const running = inflight.add(controller);
      let streaming = false;
      try {
        started = await chat.start(key, body.value, controller.signal, body.text);
        const { served, routed } = started;
        log.generation = served.id;
        log.stream = routed.answer.kind === 'stream';
        log.model = served.model;
        log.provider = served.provider;
        if (routed.failures.length > 0) log.fallbacks = triedProviders(routed.failures);
        if (routed.answer.kind === 'json') {
          const text = await chat.complete(started);
          const bytes = Buffer.byteLength(text);
          res.writeHead(
            200,
            this.headers({ 'x-generation-id': served.id, 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes) }),
          );
          res.end(text, encodingFor(text, bytes));
          return;
        }
        streaming = true;
        await writeSse(res, this.headers({ 'x-generation-id': served.id }), chat.relay(started, controller.signal), controller.signal);
        // A stream the upstream failed midway ended with the error event, status 200: its line says so.
        const failure = started.streamFailure;
        if (failure) {
          log.error = failure.kind === 'rate_limited' ? 'upstream_rate_limited' : 'upstream_failed';
          log.providers = triedProviders([{ attempt: routed.attempt, failure }]);
        }
      } catch (err) {
        Object.assign(log, whyFailed(err));
        if (!streaming) return this.fail(err);
        // A stream under way: the upstream call is cancelled, and the client answered here.
        controller.abort();
        endFailedStream(res, toHttpError(err, logger, this.reqId), this.reqId);
      } finally {
        // Every path settles; one that ended before any output (the client gone first) releases its holds.
        if (started && !started.settlement.settled) started.settlement.settleNothing();
        deadline.cancel();
        inflight.delete(running, controller);
      }
    }

    /** Answers the request with the error `err` (error-handler.ts), unless an answer went out already. */
    private fail(err: unknown): void {
      const { answer, logFields } = errorAnswer(err, logger, metrics, this.reqId, this.log);
      this.log = logFields as ChatLogFields | undefined;
      const res = this.res;
      if (res.headersSent || res.destroyed) return;
      const text = JSON.stringify(answer.body);
      const bytes = Buffer.byteLength(text);
      try {
        res.writeHead(answer.status, this.headers({ ...answer.headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes) }));
        res.end(text, encodingFor(text, bytes));
      } catch {
        res.destroy(); // a head that cannot be written: the client sees the connection end
      }
    }

    /**
     * What no path above answered (a bug): logged, answered 500 when nothing went out yet, and never
     * an unhandled rejection (Node ends the process on one; Fastify caught these for its routes).
     */
    private broke(err: unknown): void {
      try {
        this.fail(err);
      } catch {
        this.res.destroy();
      }
    }
  }

  return (req, res) => new ChatExchange(req, res).start();
}
