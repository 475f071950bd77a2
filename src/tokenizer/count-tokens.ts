import { countTokens as countO200k } from 'gpt-tokenizer';

/** Tokens in a text, counted with a real tokenizer (o200k_base). */
export function countTokens(text: string): number {
  return text ? countO200k(text) : 0;
}

/** Per-message framing tokens, as OpenAI's chat format adds them. */
const TOKENS_PER_MESSAGE = 3;

interface Part {
  type?: unknown;
  text?: unknown;
}

/** The text of a message's content, whether a string or an array of parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: Part) => (p && typeof p === 'object' && typeof p.text === 'string' ? p.text : '')).join('');
}

/** Image parts in the messages, for image pricing. */
export function countImages(messages: readonly unknown[]): number {
  let n = 0;
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (Array.isArray(content)) n += content.filter((p: Part) => p && (p.type === 'image_url' || p.type === 'input_image')).length;
  }
  return n;
}

/**
 * The request's prompt-side fields besides the messages (tool schemas, a response format), as the text
 * an upstream tokenizes with the prompt.
 */
export function promptSideText(body: Record<string, unknown>): string {
  const side: Record<string, unknown> = {};
  for (const field of ['tools', 'functions', 'tool_choice', 'response_format']) if (body[field] !== undefined) side[field] = body[field];
  return Object.keys(side).length > 0 ? JSON.stringify(side) : '';
}

/** Prompt tokens of a chat request, counted by the gateway when the upstream reports none. */
export function countPromptTokens(messages: readonly unknown[], sideText = ''): number {
  let total = 3 + countTokens(sideText);
  for (const m of messages) {
    const msg = (m ?? {}) as { content?: unknown; name?: unknown; tool_calls?: unknown };
    total += TOKENS_PER_MESSAGE + countTokens(contentText(msg.content));
    if (typeof msg.name === 'string') total += countTokens(msg.name);
    if (msg.tool_calls !== undefined) total += countTokens(JSON.stringify(msg.tool_calls));
  }
  return total;
}
