// The baseline for bench/overhead.mjs: a bare pass-through proxy on an undici Pool, no checks at all.
// Reads the client's body, forwards it to UPSTREAM/v1/chat/completions with pool.stream, and pipes
// the upstream answer (JSON or SSE) back as it arrives. Prints `listening PORT` when ready.
// Usage: node bench/bare-proxy.mjs http://127.0.0.1:PORT [connections]
import http from 'node:http';
import { Pool } from 'undici';

const pool = new Pool(process.argv[2], { connections: Number(process.argv[3] ?? 128), keepAliveTimeout: 30_000 });

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (d) => chunks.push(d));
  req.on('end', () => {
    const headers = { 'content-type': 'application/json' };
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    pool
      .stream({ method: 'POST', path: '/v1/chat/completions', headers, body: Buffer.concat(chunks) }, ({ statusCode, headers: h }) => {
        const out = { 'content-type': h['content-type'] ?? 'application/json' };
        if (h['content-length']) out['content-length'] = h['content-length'];
        res.writeHead(statusCode, out);
        return res; // undici writes the upstream body into the client's response as it arrives
      })
      .catch((err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 502, message: String(err?.message ?? err) } }));
      });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
