import { createRequire } from 'node:module';
import type { countTokens as CountTokens } from 'gpt-tokenizer';
import { isJsonObject, type JsonObject } from '../json-object.js';
import { jsonText } from '../json-text.js';

/**
 * o200k_base's counter, loaded the first time a text is counted rather than with the gateway: its
 * rank tables take ~0.4 s to load and ~20 MB of heap (~55 MB of RSS), and a gateway whose providers
 * report usage may never count (it counts an answer without usage, and a prompt before refusing it
 * with a 402). Loaded synchronously (the package's CommonJS build), so counting stays synchronous.
 */
let o200k: typeof CountTokens | undefined;
function countO200k(text: string): number {
  o200k ??= (createRequire(import.meta.url)('gpt-tokenizer') as { countTokens: typeof CountTokens }).countTokens;
  return o200k(text);
}

/** A run of non-space characters (or of space) longer than this is counted a slice this long at a time. */
const MAX_RUN = 128;

function isSpace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) ||
    c === 32 ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * Tokens in a text, counted with a real tokenizer (o200k_base). Byte-pair merging takes time quadratic
 * in the length of one pre-tokenized piece, and o200k leaves runs of letters, punctuation or space
 * unbounded: 100,000 characters without a space (a degenerate answer, a pasted blob, a hostile
 * prompt) held the event loop for seconds, a megabyte for tens of minutes. So a run longer than
 * MAX_RUN is counted in slices of MAX_RUN, the text around it as it is: ordinary text is counted
 * exactly, and such a run about a token a slice above its exact count, in time linear in its length.
 */
export function countTokens(text: string): number {
  if (!text) return 0;
  let total = 0;
  let from = 0;
  let runStart = 0;
  let runSpace = isSpace(text.charCodeAt(0));
  for (let i = 1; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const space = isSpace(code);
    if (space !== runSpace) {
      runSpace = space;
      runStart = i;
    } else if (i - runStart >= MAX_RUN && !(code >= 0xdc00 && code <= 0xdfff)) {
      // (never between the two halves of a surrogate pair)
      total += countO200k(text.slice(from, i));
      from = runStart = i;
    }
  }
  return total + countO200k(text.slice(from));
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

/** A prompt's non-text parts, as the estimate prices them (CONTRACT §7). */
export interface MediaParts {
  images: number;
  /** Characters of inline `input_audio` data (base64), all parts together. */
  audioChars: number;
  /** Characters of inline `file` data (a base64 data URL), all parts together. */
  fileChars: number;
  /** File or audio parts whose data is not inline (`file_id`, a URL): their size is unknown. */
  byReference: number;
}

const obj = (v: unknown): JsonObject | undefined => (isJsonObject(v) ? v : undefined);

/** One pass over the parts of every message: image, audio and file parts, and how much inline data they carry. */
export function mediaParts(messages: readonly unknown[]): MediaParts {
  const parts: MediaParts = { images: 0, audioChars: 0, fileChars: 0, byReference: 0 };
  for (const m of messages) {
    const content = obj(m)?.content;
    if (!Array.isArray(content)) continue;
    for (const p of content) {
      const part = obj(p);
      if (!part) continue;
      if (part.type === 'image_url' || part.type === 'input_image') parts.images += 1;
      else if (part.type === 'input_audio') {
        const data = obj(part.input_audio)?.data;
        if (typeof data === 'string') parts.audioChars += data.length;
        else parts.byReference += 1;
      } else if (part.type === 'file' || part.type === 'input_file') {
        const data = part.type === 'file' ? obj(part.file)?.file_data : part.file_data;
        if (typeof data === 'string') parts.fileChars += data.length;
        else parts.byReference += 1;
      }
    }
  }
  return parts;
}

/** The figures `mediaPartTokens` prices parts with (config: `part_tokens`). */
export interface PartTokenFigures {
  image: number;
  audio_per_kb: number;
  file_per_kb: number;
  /** null: the model's context length. */
  by_reference: number | null;
}

/**
 * Tokens an upstream may bill inside prompt_tokens for a prompt's image, audio and file parts: a
 * figure per image, a bound from the size of inline audio and file data, a fixed figure for data sent
 * by reference; never more than the model's context length, the most one prompt can hold.
 */
export function mediaPartTokens(parts: MediaParts, figures: PartTokenFigures, contextLength: number): number {
  const perKb = (chars: number, perKb: number) => Math.ceil((chars * perKb) / 1000);
  const total =
    parts.images * figures.image +
    perKb(parts.audioChars, figures.audio_per_kb) +
    perKb(parts.fileChars, figures.file_per_kb) +
    parts.byReference * (figures.by_reference ?? contextLength);
  return Math.min(total, contextLength);
}

/**
 * The request's prompt-side fields besides the messages (tool schemas, a response format), as the text
 * an upstream tokenizes with the prompt.
 */
export function promptSideText(body: Record<string, unknown>): string {
  const side: Record<string, unknown> = {};
  for (const field of ['tools', 'functions', 'tool_choice', 'response_format']) if (body[field] !== undefined) side[field] = body[field];
  return Object.keys(side).length > 0 ? jsonText(side, 'tools, tool_choice or response_format') : '';
}

/** Prompt tokens of a chat request, counted by the gateway when the upstream reports none. */
export function countPromptTokens(messages: readonly unknown[], sideText = ''): number {
  let total = 3 + countTokens(sideText);
  for (const m of messages) {
    const msg = (m ?? {}) as { content?: unknown; name?: unknown; tool_calls?: unknown; function_call?: unknown };
    total += TOKENS_PER_MESSAGE + countTokens(contentText(msg.content));
    if (typeof msg.name === 'string') total += countTokens(msg.name);
    if (msg.tool_calls !== undefined) total += countTokens(jsonText(msg.tool_calls, 'messages[].tool_calls'));
    // The legacy form of a tool call (OpenAI's `functions` API), billed like tool_calls.
    if (msg.function_call !== undefined && msg.function_call !== null) total += countTokens(jsonText(msg.function_call, 'messages[].function_call'));
  }
  return total;
}
