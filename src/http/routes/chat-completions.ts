import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyRecord } from '../../ledger/ledger.js';
import type { Started } from '../../chat/chat-service.js';
import { authenticateKey } from '../auth.js';
import type { AppDeps } from '../app-deps.js';
import { writeSse } from '../sse.js';

/** POST /api/v1/chat/completions: OpenAI's API with OpenRouter's routing fields. */
export function registerChatRoute(app: FastifyInstance, deps: AppDeps): void {
  const { ledger, clock, chat, inflight, config } = deps;

  // The key is checked before the body is read (CONTRACT §6: DDoS guard, then key), so a bad key
  // is a 401 whatever the body holds.
  const keys = new WeakMap<FastifyRequest, KeyRecord>();
  const onRequest = async (req: FastifyRequest) => {
    keys.set(req, await authenticateKey(req, ledger, clock, 'inference'));
  };

  app.post('/api/v1/chat/completions', { onRequest }, async (req, reply) => {
    const key = keys.get(req) ?? (await authenticateKey(req, ledger, clock, 'inference'));
    const controller = new AbortController();
    // The client went away before the answer was complete: cancel the upstream call.
    const onClose = () => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once('close', onClose);
    // The request deadline: past it the request is cancelled like a client that went away (it settles,
    // charged for what was delivered, and its holds end with it).
    const deadline = clock.schedule(config.limits.request_deadline_ms, () =>
      controller.abort(new DOMException(`the request ran past its deadline (${config.limits.request_deadline_ms} ms)`, 'TimeoutError')),
    );
    inflight.add(controller);
    let started: Started | undefined;
    try {
      started = await chat.start(key, req.body, controller.signal, req.rawBody);
      const headers = { 'x-generation-id': started.served.id };
      // The access-log line (app.ts) names the generation and whether it was streamed.
      req.logFields = { generation: started.served.id, stream: started.routed.answer.kind === 'stream' };
      if (started.routed.answer.kind === 'json') {
        return reply
          .headers(headers)
          .type('application/json; charset=utf-8')
          .send(await chat.complete(started));
      }
      reply.hijack();
      await writeSse(reply.raw, headers, chat.relay(started, controller.signal));
      return reply;
    } finally {
      // Every path settles; one that ended before any output (the client gone first) releases its holds.
      if (started && !started.settlement.settled) started.settlement.settleNothing();
      deadline.cancel();
      inflight.delete(controller);
    }
  });
}
