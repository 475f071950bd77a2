// What the floor proxies (bench/floor-proxy.mjs on node:http, bench/floor-fastify.mjs on Fastify) do
// with a request, the same in both: the client's JSON parsed (to read the model) and written anew for
// the upstream, the upstream's answer parsed (to read its usage) and written anew with the gateway's
// own id, model and provider in it (JSON: the whole answer; SSE: every event, each `data:` line
// parsed and written again).
import { Pool } from 'undici';

/** An upstream answer (or one SSE event's data) with the gateway's fields in it, as JSON text. */
function rewrite(text, id, model) {
  const answer = JSON.parse(text);
  answer.id = id;
  answer.model = model;
  answer.provider = 'fake';
  return JSON.stringify(answer);
}

/** Relays an SSE body event by event, every `data: {…}` line parsed and written anew. */
async function relayEvents(body, res, id, model) {
  let rest = '';
  for await (const chunk of body) {
    const events = (rest + chunk.toString('utf8')).split('\n\n');
    rest = events.pop();
    let out = '';
    for (const event of events) {
      const data = event.startsWith('data: ') ? event.slice(6) : undefined;
      out += data === undefined || data === '[DONE]' ? `${event}\n\n` : `data: ${rewrite(data, id, model)}\n\n`;
    }
    if (out) res.write(out);
  }
  res.end(rest);
}

/**
 * A relay to the upstream `url`: `relay(request, authorization, target)` sends the parsed body
 * `request` on and answers `target` (a node:http response, or a Fastify reply) through `answer`, one
 * object a server, made once: `answer.json(target, status, id, text)` for a JSON answer,
 * `answer.stream(target, status, id)` for a stream (it returns the node:http response its events are
 * written to).
 */
export function floorRelay(url, connections, answer) {
  const pool = new Pool(url, { connections, keepAliveTimeout: 30_000 });
  let next = 0;
  return async (request, authorization, target) => {
    let res;
    try {
      const model = request.model;
      request.model = 'fake-model';
      const headers = { 'content-type': 'application/json' };
      if (authorization) headers.authorization = authorization;
      const upstream = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body: JSON.stringify(request) });
      const id = `gen-${Date.now()}-${next++}`;
      if (String(upstream.headers['content-type']).includes('text/event-stream')) {
        res = answer.stream(target, upstream.statusCode, id);
        await relayEvents(upstream.body, res, id, model);
        return;
      }
      answer.json(target, upstream.statusCode, id, rewrite(await upstream.body.text(), id, model));
    } catch (err) {
      const body = JSON.stringify({ error: { code: 502, message: String(err?.message ?? err) } });
      if (res) res.end(body);
      else answer.json(target, 502, 'none', body);
    }
  };
}
