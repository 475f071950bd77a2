import { randomUUID } from 'node:crypto';
import { cancellableSleep, type CancelSignal } from '../../cancellation.js';
import type { Clock } from '../../clock.js';
import { countPromptTokens } from '../../tokenizer/count-tokens.js';
import { tokenUsage } from '../../ledger/pricing.js';
import { ProviderError, type ChatAnswer, type ChatCall, type Chunk, type ProviderAdapter, type StreamBatch } from '../provider.js';
import { chunkEvent } from '../stream-event.js';
import { demoTokens } from './demo-text.js';

export interface DemoProviderOptions {
  id: string;
  tokenLatencyMs: number;
  clock: Clock;
}

/** The built-in provider: no network, deterministic text, token-by-token streaming. */
export class DemoProvider implements ProviderAdapter {
  readonly id: string;

  constructor(private readonly options: DemoProviderOptions) {
    this.id = options.id;
  }

  async chat(call: ChatCall): Promise<ChatAnswer> {
    const body = call.body.value;
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const rawMax = body.max_completion_tokens ?? body.max_tokens;
    const maxTokens = typeof rawMax === 'number' ? rawMax : undefined;
    const tokens = demoTokens(messages, maxTokens);
    const full = demoTokens(messages, undefined);
    const finish = tokens.length < full.length ? 'length' : 'stop';
    const usage = {
      prompt_tokens: countPromptTokens(messages),
      completion_tokens: tokens.length,
      total_tokens: countPromptTokens(messages) + tokens.length,
    };
    const base = {
      id: `demo-${randomUUID()}`,
      created: Math.floor(this.options.clock.now() / 1000),
      model: call.model,
    };
    if (!call.stream) {
      const answer = {
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: finish }],
        usage,
      };
      return {
        kind: 'json',
        text: JSON.stringify(answer),
        body: answer,
        usage: tokenUsage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
      };
    }
    return { kind: 'stream', events: this.stream(base, tokens, finish, usage, call.signal) };
  }

  /** A batch per token, as a network upstream would deliver them one read at a time. */
  private async *stream(base: Chunk, tokens: string[], finish: string, usage: Chunk, signal: CancelSignal): AsyncGenerator<StreamBatch> {
    const event = (chunk: Chunk, last = false) => ({ events: [chunkEvent(chunk)], last });
    const chunk = (delta: Chunk, finishReason: string | null) =>
      event({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] });
    yield chunk({ role: 'assistant', content: '' }, null);
    for (const token of tokens) {
      if (this.options.tokenLatencyMs > 0) await cancellableSleep(this.options.tokenLatencyMs, signal);
      if (signal.aborted) throw new ProviderError({ kind: 'network', message: 'request aborted' });
      yield chunk({ content: token }, null);
    }
    yield chunk({}, finish);
    yield event({ ...base, object: 'chat.completion.chunk', choices: [], usage }, true);
  }

  async close(): Promise<void> {}
}
