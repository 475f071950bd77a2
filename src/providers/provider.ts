import type { TokenUsage } from '../ledger/pricing.js';
import type { CancelSignal } from '../cancellation.js';
import type { Utf8Bytes } from '../utf8-bytes.js';
import type { ChoiceDelivered } from './delivered-text.js';

/**
 * A provider adapter: one kind of upstream (OpenAI-compatible, the built-in demo, …). Adapters are
 * built by main.ts from config and handed their clients; core code imports only this file.
 */
export type ChatBody = Record<string, unknown>;
export type Chunk = Record<string, unknown>;

/**
 * What is sent upstream besides `model` and `stream`: the client's body without the gateway's own
 * fields, as an object and as JSON text (spliced from the client's own text when it could be, so that
 * the body is not serialised again).
 */
export interface UpstreamBody {
  /** (May be built when first read.) */
  readonly value: ChatBody;
  /**
   * `value`'s members as JSON text, without the object's braces ('' for none): an adapter writes its
   * own members and these inside braces of its own, where cutting them out of the object's text
   * would copy it once more.
   */
  members: string;
  /**
   * The members of the client's `stream_options` (not in `value`): an adapter that asks a stream's
   * upstream for its usage sets `include_usage` and passes the rest on.
   */
  readonly streamOptions: ChatBody | undefined;
}

export interface ChatCall {
  /** The upstream's name for the model. */
  model: string;
  body: UpstreamBody;
  stream: boolean;
  /** The key to call the upstream with: the account's own (BYOK) or the provider's configured one. */
  apiKey: string | undefined;
  signal: CancelSignal;
}

export type FailureKind = 'rate_limited' | 'http' | 'network' | 'timeout' | 'invalid_response';

/** Why an upstream did not answer, in terms routing can act on. */
export interface ProviderFailure {
  kind: FailureKind;
  message: string;
  status?: number;
  /** The provider's own error code, when it gave one. */
  code?: string;
  /** How long the provider asked us to wait, when it said. */
  retryAfterMs?: number;
}

export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  constructor(readonly failure: ProviderFailure) {
    super(failure.message);
  }
}

export interface JsonAnswer {
  kind: 'json';
  /** The answer's JSON text, as the upstream sent it. */
  text: string;
  /** The same, parsed. */
  body: ChatBody;
  usage: TokenUsage | undefined;
}

/** What the gateway reads from each chunk; what it delivered, to which choice, as ChoiceDelivered says. */
interface StreamEventBase extends ChoiceDelivered {
  /** The chunk's JSON text as the upstream sent it: its UTF-8 bytes (utf8-bytes.ts), unchanged. */
  text: Utf8Bytes;
  /** Token counts, when this chunk carries the upstream's usage. */
  usage: TokenUsage | undefined;
  /** The first choice's finish reason, when this chunk carries one. */
  finishReason: string | undefined;
  /** Whether the chunk carries output: text, reasoning, a tool call or a finish reason. */
  output: boolean;
}

/** A chunk that was parsed, because the gateway must read more of it or may have to change it. */
export interface ParsedStreamEvent extends StreamEventBase {
  chunk: Chunk;
  plain?: undefined;
}

/**
 * A plain chunk (plain-chunk.ts): a few words of text and nothing the gateway must change but its own
 * fields, read without being parsed. `plain` is its members after the upstream's own fields, as written.
 */
export interface PlainStreamEvent extends StreamEventBase {
  chunk?: undefined;
  plain: Utf8Bytes;
}

/**
 * One event of a streamed answer: the chunk's JSON text as the upstream sent it (its bytes), so that
 * the gateway can relay it by splicing rather than rebuilding it, with what the gateway needs from it
 * read out.
 */
export type StreamEvent = ParsedStreamEvent | PlainStreamEvent;

/** The events one read from the upstream brought (`T`: as the adapter reads them; the gateway takes StreamEvents). */
export interface StreamBatch<T = StreamEvent> {
  events: T[];
  /**
   * The stream reached its end with this read (`data: [DONE]`, or the body's end): no batch follows,
   * so the relay can send these with its closing events in one write.
   */
  last: boolean;
}

/**
 * A streamed answer: its events in batches, one batch for what one read from the upstream brought
 * (so that the relay takes one step per read, not per event). The iterator throws ProviderError when
 * the stream fails.
 */
export interface StreamAnswer {
  kind: 'stream';
  events: AsyncIterable<StreamBatch>;
}

export type ChatAnswer = JsonAnswer | StreamAnswer;

export interface ProviderAdapter {
  readonly id: string;
  /** Resolves with the answer once the upstream accepted the call; rejects with ProviderError. */
  chat(call: ChatCall): Promise<ChatAnswer>;
  close(): Promise<void>;
}
