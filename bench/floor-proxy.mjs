// The "floor" row of bench/overhead.mjs: the bare pass-through (bare-proxy.mjs) plus the least work a
// gateway that charges for what it relays cannot skip: it parses the client's JSON body (to read the
// model), writes the upstream's body anew with the upstream model in it, parses the upstream's answer
// (to read its usage), and writes it anew with the gateway's own id, model and provider in it (JSON:
// the whole answer; SSE: every event, each `data:` line parsed and written again). No keys, no limits,
// no ledger, no framework: node:http and undici, as the bare proxy. What Tollgate adds beyond this row
// is its checks, its charge and its framework; what this row adds beyond the bare one is what reading
// the traffic costs any gateway. Prints `listening PORT` when ready.
// Usage: node bench/floor-proxy.mjs http://127.0.0.1:PORT [connections]
import http from 'node:http';
import { Pool } from 'undici';

const pool = new Pool(process.argv[2], { connections: Number(process.argv[3] ?? 128), keepAliveTimeout: 30_000 });
let next = 0;

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

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (d) => chunks.push(d));
  req.on('end', async () => {
    try {
      const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const model = request.model;
      request.model = 'fake-model';
      const headers = { 'content-type': 'application/json' };
      if (req.headers.authorization) headers.authorization = req.headers.authorization;
      const upstream = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body: JSON.stringify(request) });
      const id = `gen-${Date.now()}-${next++}`;
      if (String(upstream.headers['content-type']).includes('text/event-stream')) {
        res.writeHead(upstream.statusCode, { 'content-type': 'text/event-stream', 'x-generation-id': id });
        await relayEvents(upstream.body, res, id, model);
        return;
      }
      const text = rewrite(await upstream.body.text(), id, model);
      res.writeHead(upstream.statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-generation-id': id });
      res.end(text);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 502, message: String(err?.message ?? err) } }));
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
