// A fast fake OpenAI-compatible upstream for bench/overhead.mjs, on 127.0.0.1 only.
// POST …/chat/completions answers at once: a JSON completion with usage, or (when the body asks for
// "stream": true) ~20 SSE chunks, a finish chunk, a usage chunk and `data: [DONE]`, each event written
// with its own res.write() in one tick. Answers are prebuilt buffers; the request body is read and
// only searched for `"stream":true`, so this process costs as little as it can.
// Slow mode, for the soak (`--chunk-ms MS --chunks N`): a stream sends its role chunk at once, then N
// content chunks one every MS milliseconds, then the finish chunk, the usage chunk and `data: [DONE]`
// (usage stays 260 prompt and 20 completion tokens, so every stream costs the same).
// Prints `listening PORT` when ready.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({ options: { 'chunk-ms': { type: 'string', default: '0' }, chunks: { type: 'string', default: '20' } } });
const CHUNK_MS = Number(opt['chunk-ms']);
const CHUNKS = Number(opt.chunks);

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

const slowChunks = Array.from({ length: CHUNKS }, (_, i) => chunk({ content: `${i === 0 ? '' : ' '}${words[i % words.length]}` }));

function slowStream(res) {
  res.write(sseEvents[0]);
  let i = 0;
  const timer = setInterval(() => {
    if (i < slowChunks.length) res.write(slowChunks[i++]);
    if (i >= slowChunks.length) {
      clearInterval(timer);
      for (const e of sseEvents.slice(-3)) res.write(e);
      res.end();
    }
  }, CHUNK_MS);
  res.on('close', () => clearInterval(timer));
}

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
      if (CHUNK_MS > 0) return slowStream(res);
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
