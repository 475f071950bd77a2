import type { TokenUsage } from '../ledger/pricing.js';

/**
 * A provider adapter: one kind of upstream (OpenAI-compatible, the built-in demo, …). Adapters are
 * built by main.ts from config and handed their clients; core code imports only this file.
 */
export type ChatBody = Record<string, unknown>;
export type Chunk = Record<string, unknown>;

export interface ChatCall {
  /** The client's body with `model` replaced by the upstream model name; `stream` set as wanted. */
  body: ChatBody;
  stream: boolean;
  /** The key to call the upstream with: the account's own (BYOK) or the provider's configured one. */
  apiKey: string | undefined;
  signal: AbortSignal;
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
  body: ChatBody;
  usage: TokenUsage | undefined;
}

/** A streamed answer: parsed chunks; the iterator throws ProviderError when the stream fails. */
export interface StreamAnswer {
  kind: 'stream';
  chunks: AsyncIterable<Chunk>;
}

export type ChatAnswer = JsonAnswer | StreamAnswer;

export interface ProviderAdapter {
  readonly id: string;
  /** Resolves with the answer once the upstream accepted the call; rejects with ProviderError. */
  chat(call: ChatCall): Promise<ChatAnswer>;
  close(): Promise<void>;
}
