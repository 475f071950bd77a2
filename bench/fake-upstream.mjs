// A fast fake OpenAI-compatible upstream for bench/overhead.mjs, on 127.0.0.1 only.
// POST …/chat/completions answers at once: a JSON completion with usage, or (when the body asks for
// "stream": true) ~20 SSE chunks, a finish chunk, a usage chunk and `data: [DONE]`, each event written
// with its own res.write() in one tick. Answers are prebuilt buffers; the request body is read and
// only searched for `"stream":true`, so this process costs as little as it can.
// Prints `listening PORT` when ready.
import http from 'node:http';

const created = Math.floor(Date.now() / 1000);
const usage = { prompt_tokens: 260, completion_tokens: 20, total_tokens: 280 };
const words = 'Sure, here is a short answer to your question about the weather in Paris today and tomorrow.'.split(' ');

const jsonAnswer = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created,
    model: 'fake-model',
    choices: [{ index: 0, message: { role: 'assistant', content: words.join(' ') }, finish_reason: 'stop' }],
    usage,
  }),
);

const chunk = (delta, finish = null, extra = {}) =>
  Buffer.from(
    `data: ${JSON.stringify({
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created,
      model: 'fake-model',
      choices: delta === null ? [] : [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    })}\n\n`,
  );
const sseEvents = [
  chunk({ role: 'assistant', content: '' }),
  ...words.slice(0, 19).map((w, i) => chunk({ content: (i === 0 ? '' : ' ') + w })),
  chunk({}, 'stop'),
  chunk(null, null, { usage }),
  Buffer.from('data: [DONE]\n\n'),
];

const server = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    if (/"stream"\s*:\s*true/.test(body)) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const e of sseEvents) res.write(e);
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': jsonAnswer.length });
      res.end(jsonAnswer);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
