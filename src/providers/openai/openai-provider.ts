import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { callTimeout, type CallTimeout } from '../../call-timeout.js';
import type { Clock } from '../../clock.js';
import { usageOf } from '../usage.js';
import {
  ProviderError,
  type ChatAnswer,
  type ChatBody,
  type ChatCall,
  type Chunk,
  type ProviderAdapter,
  type ProviderFailure,
  type StreamBatch,
  type StreamEvent,
} from '../provider.js';
import { PlainChunks } from '../plain-chunk.js';
import { answerFromChunks } from './answer-from-chunks.js';
import { chunkEvent, streamEvent } from '../stream-event.js';
import { retryAfterMs } from './retry-after.js';
import { sseBatches } from './sse-batches.js';
import { requestUpstream, type UpstreamBody, type UpstreamResponse } from './upstream-response.js';
import { describeUpstreamError, rateLimitedErrorObject, rateLimitedOrAtCapacity, upstreamText } from './upstream-error.js';
import type { CancelSignal } from '../../cancellation.js';
import { isJsonObject, type JsonObject } from '../../json-object.js';
import { jsonString } from '../../json-string.js';
import { utf8Text, type Utf8Bytes } from '../../utf8-bytes.js';

/**
 * A stream's `stream_options`: the usage chunk asked for (the gateway charges by it), with whatever
 * else the client asked of the stream passed on as it asked.
 */
function streamOptionsText(client: ChatBody | undefined): string {
  return client === undefined ? INCLUDE_USAGE : JSON.stringify({ ...client, include_usage: true });
}
const INCLUDE_USAGE = '{"include_usage":true}';

export interface OpenAiProviderOptions {
  id: string;
  baseUrl: string;
  timeouts: { firstByte: number; idle: number; total: number };
  clock: Clock;
  /** What times a call's total limit (default: the system's timers). */
  timers?: Pick<Clock, 'schedule'>;
  /** The pool comes in from main.ts; the adapter never builds its own client. */
  pool: Dispatcher;
}

const MAX_ERROR_BODY = 64 * 1024;

function failureFromError(err: unknown, callerAborted: boolean): ProviderFailure {
  if (callerAborted) return { kind: 'network', message: 'request aborted' };
  if (err instanceof undiciErrors.HeadersTimeoutError) return { kind: 'timeout', message: 'upstream sent no response in time (first byte)' };
  if (err instanceof undiciErrors.BodyTimeoutError) return { kind: 'timeout', message: 'upstream stalled (idle timeout)' };
  if (err instanceof undiciErrors.ConnectTimeoutError) return { kind: 'timeout', message: 'upstream connection timed out' };
  if ((err as Error | undefined)?.name === 'TimeoutError' || (err as Error | undefined)?.name === 'AbortError') {
    return { kind: 'timeout', message: 'upstream exceeded the total timeout' };
  }
  const code = (err as { code?: string } | undefined)?.code;
  return { kind: 'network', message: `upstream unreachable${code ? ` (${code})` : ''}` };
}

/** An OpenAI-compatible chat-completions upstream (OpenAI, Groq, vLLM, llama.cpp, Ollama, …). */
export class OpenAiProvider implements ProviderAdapter {
  readonly id: string;
  private readonly path: string;

  constructor(private readonly options: OpenAiProviderOptions) {
    this.id = options.id;
    const url = new URL(options.baseUrl);
    this.path = `${url.pathname.replace(/\/+$/, '')}/chat/completions`;
  }

  static poolFor(baseUrl: string, connections: number, timeouts: { firstByte: number; idle: number }): Pool {
    return new Pool(new URL(baseUrl).origin, {
      connections,
      keepAliveTimeout: 30_000,
      headersTimeout: timeouts.firstByte,
      bodyTimeout: timeouts.idle,
    });
  }

  async chat(call: ChatCall): Promise<ChatAnswer> {
    const { timeouts, timers } = this.options;
    // Held for the whole call and cleared at its end (a stream's end is in readStream).
    const timeout = callTimeout(call.signal, timeouts.total, timers);
    try {
      return await this.call(call, timeout);
    } catch (err) {
      timeout.clear();
      throw err;
    }
  }

  private async call(call: ChatCall, timeout: CallTimeout): Promise<ChatAnswer> {
    const { timeouts, clock } = this.options;
    const signal = timeout.signal;
    // The adapter's own fields first, then the client's members as they came.
    const own = call.stream ? `"stream":true,"stream_options":${streamOptionsText(call.body.streamOptions)}` : '"stream":false';
    const members = call.body.members;
    const body = `{"model":${jsonString(call.model)},${own}${members === '' ? '' : `,${members}`}}`;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: call.stream ? 'text/event-stream' : 'application/json' };
    if (call.apiKey) headers.authorization = `Bearer ${call.apiKey}`;

    let res: UpstreamResponse;
    try {
      res = await requestUpstream(
        this.options.pool,
        { method: 'POST', path: this.path, headers, body, headersTimeout: timeouts.firstByte, bodyTimeout: timeouts.idle },
        signal,
      );
    } catch (err) {
      throw new ProviderError(failureFromError(err, call.signal.aborted));
    }

    if (res.statusCode < 200 || res.statusCode >= 300) {
      const text = await res.body.text(MAX_ERROR_BODY).catch(() => '');
      const wait = retryAfterMs(res.headers, clock.now());
      const described = describeUpstreamError(res.statusCode, text, call.apiKey);
      const failure: ProviderFailure = {
        kind: rateLimitedOrAtCapacity(res.statusCode, described, wait !== undefined) ? 'rate_limited' : 'http',
        status: res.statusCode,
        ...described,
      };
      if (wait !== undefined) failure.retryAfterMs = wait;
      throw new ProviderError(failure);
    }

    // A media type is case-insensitive (Text/Event-Stream is an event stream too).
    const contentType = String(res.headers['content-type'] ?? '').toLowerCase();
    if (call.stream && contentType.includes('text/event-stream')) {
      return { kind: 'stream', events: this.readStream(res.body, call.signal, call.apiKey, timeout) };
    }
    if (contentType.includes('text/event-stream')) {
      // The upstream streamed an answer asked for whole (it ignored "stream": false): it did the work,
      // so its stream is read to the end and answered whole, rather than failed (and paid for again
      // at the next endpoint).
      const answer = answerFromChunks(await this.readChunks(res.body, call.signal, call.apiKey));
      timeout.clear();
      return { kind: 'json', text: JSON.stringify(answer), body: answer, usage: usageOf(answer) };
    }
    let text: string;
    let parsed: unknown;
    try {
      text = await res.body.text();
      // A byte-order mark opening the answer is no part of it (as one opening a stream is not).
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ProviderError(
        err instanceof SyntaxError ? { kind: 'invalid_response', message: 'upstream answer is not JSON' } : failureFromError(err, call.signal.aborted),
      );
    }
    // An error reported in a 200 answer (OpenRouter and others do, for errors during generation) is
    // the upstream's failure, as the same error mid-stream is, unless the answer has output too.
    const choices = isJsonObject(parsed) ? parsed.choices : undefined;
    if (isJsonObject(parsed) && isJsonObject(parsed.error) && !(Array.isArray(choices) && choices.length > 0)) {
      throw new ProviderError(errorBodyFailure(parsed.error, call.apiKey, 'upstream reported an error'));
    }
    if (!Array.isArray(choices)) throw new ProviderError({ kind: 'invalid_response', message: 'upstream answer has no choices' });
    timeout.clear();
    const answer = parsed as Chunk;
    if (call.stream) {
      // The upstream ignored stream: true; replay its answer as a stream of one chunk.
      return { kind: 'stream', events: singleChunkStream(answer) };
    }
    return { kind: 'json', text, body: answer, usage: usageOf(answer) };
  }

  /** The upstream's events, a batch per read; ends at `data: [DONE]` or when the upstream closes. */
  private readStream(body: UpstreamBody, callerSignal: CancelSignal, sentKey: string | undefined, timeout: CallTimeout): AsyncIterable<StreamBatch> {
    const plainChunks = new PlainChunks();
    return sseBatches(body, {
      toEvent: (data) => this.event(data, sentKey, plainChunks),
      toError: (err) => streamFailure(err, callerSignal),
      onEnded: () => timeout.clear(),
    });
  }

  /** Every chunk of a stream, parsed, once it ended; rejects with a ProviderError as the stream would fail. */
  private async readChunks(body: UpstreamBody, callerSignal: CancelSignal, sentKey: string | undefined): Promise<Chunk[]> {
    const chunks: Chunk[] = [];
    const batches = sseBatches(body, {
      toEvent: (data) => parsedChunk(data, sentKey),
      toError: (err) => streamFailure(err, callerSignal),
      onEnded: () => undefined,
    });
    for await (const batch of batches) chunks.push(...batch.events);
    return chunks;
  }

  /** One event's data: a chunk, or the upstream's mid-stream error (thrown as a ProviderError). */
  private event(data: Utf8Bytes, sentKey: string | undefined, plainChunks: PlainChunks): StreamEvent {
    const plain = plainChunks.read(data);
    return plain ?? streamEvent(data, parsedChunk(data, sentKey));
  }

  async close(): Promise<void> {
    await this.options.pool.close();
  }
}

/** One event's data parsed: a chunk, or the upstream's error in it (thrown as a ProviderError). */
function parsedChunk(data: Utf8Bytes, sentKey: string | undefined): Chunk {
  let chunk: Chunk;
  try {
    chunk = JSON.parse(utf8Text(data)) as Chunk;
  } catch {
    throw new ProviderError({ kind: 'invalid_response', message: 'upstream sent a chunk that is not JSON' });
  }
  if (!isJsonObject(chunk)) {
    throw new ProviderError({ kind: 'invalid_response', message: 'upstream sent a chunk that is not a JSON object' });
  }
  if (isJsonObject(chunk.error)) throw new ProviderError(errorBodyFailure(chunk.error, sentKey, 'upstream reported an error mid-stream'));
  return chunk;
}

/** What a stream's reader is thrown when its body fails: the ProviderError it failed with, or one for the failure. */
function streamFailure(err: unknown, callerSignal: CancelSignal): ProviderError {
  return err instanceof ProviderError ? err : new ProviderError(failureFromError(err, callerSignal.aborted));
}

/** The failure an upstream reported in an `error` object of its answer or of a chunk. */
function errorBodyFailure(e: JsonObject, sentKey: string | undefined, fallback: string): ProviderFailure {
  const code = e.code ?? e.type;
  return {
    kind: rateLimitedErrorObject(code, e.type) ? 'rate_limited' : 'http',
    message: typeof e.message === 'string' ? upstreamText(e.message, sentKey, 300) : fallback,
    ...(code === undefined ? {} : { code: upstreamText(String(code), sentKey, 100) }),
  };
}

async function* singleChunkStream(answer: Chunk): AsyncGenerator<StreamBatch> {
  // A choice without an index is the one at its place (so that each answer is counted on its own).
  const choices = (answer.choices as Array<Record<string, unknown>>).map((c, i) => ({
    index: c.index ?? i,
    delta: c.message ?? {},
    finish_reason: c.finish_reason ?? null,
  }));
  const chunk = { ...answer, object: 'chat.completion.chunk', choices };
  yield { events: [chunkEvent(chunk)], last: true };
}
