import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../clock.js';
import { countPromptTokens } from '../../tokenizer/count-tokens.js';
import { ProviderError, type ChatAnswer, type ChatCall, type Chunk, type ProviderAdapter } from '../provider.js';
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
    const messages = Array.isArray(call.body.messages) ? call.body.messages : [];
    const rawMax = call.body.max_completion_tokens ?? call.body.max_tokens;
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
      model: String(call.body.model),
    };
    if (!call.stream) {
      return {
        kind: 'json',
        body: {
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: finish }],
          usage,
        },
        usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens },
      };
    }
    return { kind: 'stream', chunks: this.stream(base, tokens, finish, usage, call.signal) };
  }

  private async *stream(base: Chunk, tokens: string[], finish: string, usage: Chunk, signal: AbortSignal): AsyncGenerator<Chunk> {
    const chunk = (delta: Chunk, finishReason: string | null): Chunk => ({
      ...base,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    });
    yield chunk({ role: 'assistant', content: '' }, null);
    for (const token of tokens) {
      if (this.options.tokenLatencyMs > 0) await sleep(this.options.tokenLatencyMs, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) throw new ProviderError({ kind: 'network', message: 'request aborted' });
      yield chunk({ content: token }, null);
    }
    yield chunk({}, finish);
    yield { ...base, object: 'chat.completion.chunk', choices: [], usage };
  }

  async close(): Promise<void> {}
}
