// The "floor" row of bench/overhead.mjs: the bare pass-through (bare-proxy.mjs) plus the least work a
// gateway that charges for what it relays cannot skip (bench/lib/floor-relay.mjs): it parses the
// client's JSON body (to read the model), writes the upstream's body anew with the upstream model in
// it, parses the upstream's answer (to read its usage), and writes it anew with the gateway's own id,
// model and provider in it. No keys, no limits, no ledger, no framework: node:http and undici, as the
// bare proxy. What Tollgate adds beyond this row is its checks, its charge and its framework; what this
// row adds beyond the bare one is what reading the traffic costs any gateway. Prints `listening PORT`
// when ready.
// Usage: node bench/floor-proxy.mjs http://127.0.0.1:PORT [connections]
import http from 'node:http';
import { floorRelay } from './lib/floor-relay.mjs';

const relay = floorRelay(process.argv[2], Number(process.argv[3] ?? 128), {
  json(res, status, id, text) {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-generation-id': id });
    res.end(text);
  },
  stream(res, status, id) {
    res.writeHead(status, { 'content-type': 'text/event-stream', 'x-generation-id': id });
    return res;
  },
});

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (d) => chunks.push(d));
  req.on('end', () => {
    let request;
    try {
      request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 400, message: String(err?.message ?? err) } }));
      return;
    }
    void relay(request, req.headers.authorization, res);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
