// The floor proxy (bench/floor-proxy.mjs) on Fastify instead of node:http, set up as Tollgate's app is
// (src/http/app.ts): the body read as text by a content-type parser for every type and kept beside the
// parsed body, a request id of its own, a global onRequest hook that sets X-Request-Id on the reply and
// listens for the response's close (the access line), and the route's own onRequest hook (the key).
// What it costs beyond the floor is what Fastify costs a request (instructions.mjs --proxies
// bare,floor,floor-fastify). Prints `listening PORT` when ready.
// Usage: node bench/floor-fastify.mjs http://127.0.0.1:PORT [connections]
import Fastify from 'fastify';
import { floorRelay } from './lib/floor-relay.mjs';

// A JSON answer goes through reply.send (Fastify writes the head, X-Request-Id with it); a stream is
// the reply taken over and written raw, its head with the reply's headers, as Tollgate's route does.
const relay = floorRelay(process.argv[2], Number(process.argv[3] ?? 128), {
  json(reply, status, id, text) {
    void reply.code(status).headers({ 'content-type': 'application/json', 'x-generation-id': id }).send(text);
  },
  stream(reply, status, id) {
    reply.hijack();
    reply.raw.writeHead(status, { ...reply.getHeaders(), 'content-type': 'text/event-stream', 'x-generation-id': id });
    return reply.raw;
  },
});
let ids = 0;
const app = Fastify({ logger: false, requestIdHeader: false, genReqId: () => `req-${ids++}`, forceCloseConnections: 'idle', return503OnClosing: false });
app.decorateRequest('rawBody', undefined);
app.decorateRequest('logFields', undefined);
const parse = (req, body, done) => {
  req.rawBody = body;
  let value;
  try {
    value = JSON.parse(body);
  } catch (err) {
    err.statusCode = 400;
    return done(err);
  }
  done(null, value);
};
app.removeContentTypeParser(['text/plain', 'application/json']);
app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
app.addContentTypeParser('*', { parseAs: 'string' }, parse);
app.addHook('onRequest', (req, reply, done) => {
  reply.header('x-request-id', req.id);
  reply.raw.once('close', () => {
    req.logFields = { ...req.logFields, status: reply.raw.statusCode, ms: reply.elapsedTime };
  });
  done();
});
const onRequest = (req, _reply, done) => {
  req.logFields = { key: String(req.headers.authorization).length };
  done();
};
app.post('/v1/chat/completions', { onRequest }, async (req, reply) => {
  await relay(req.body, req.headers.authorization, reply);
  return reply;
});
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${app.server.address().port}\n`);
process.on('SIGTERM', () => process.exit(0));
