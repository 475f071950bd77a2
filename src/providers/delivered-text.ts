import { isJsonObject, type JsonObject } from '../json-object.js';
import type { Chunk } from './provider.js';

/** Text a chunk delivered (content, reasoning, tool calls), for counting when no usage came or a stream was cut short. */
export function deliveredText(chunk: Chunk): string {
  return choicesText(chunk, 'delta');
}

/**
 * Text a whole answer delivered, for counting when no usage came: content, reasoning (`reasoning`,
 * `reasoning_content`, `reasoning_details`) and tool calls, as a stream of the same answer would
 * deliver it. "Without usage from the upstream, the delivered count includes reasoning text, streamed
 * or not" (CONTRACT §7).
 */
export function answerText(body: Chunk): string {
  return choicesText(body, 'message');
}

/** The text of every choice's message (an answer) or delta (a chunk), in order. */
function choicesText(payload: Chunk, key: 'message' | 'delta'): string {
  const choices = Array.isArray(payload.choices) ? payload.choices : [];
  let text = '';
  for (const c of choices) {
    const m = isJsonObject(c) ? c[key] : undefined;
    if (!isJsonObject(m)) continue;
    if (typeof m.content === 'string') text += m.content;
    text += reasoningText(m);
    if (Array.isArray(m.tool_calls)) text += JSON.stringify(m.tool_calls);
    if (isJsonObject(m.function_call)) text += JSON.stringify(m.function_call);
  }
  return text;
}

/**
 * The reasoning text of a message or delta. Providers name it `reasoning_content` (DeepSeek, vLLM),
 * `reasoning` (OpenRouter, Groq, vLLM) or `reasoning_details` entries (OpenRouter: `text`, `summary`;
 * encrypted entries carry nothing countable), and some send the same text under two of these names:
 * the longest of them is the reasoning, counted once.
 */
function reasoningText(m: JsonObject): string {
  let details = '';
  if (Array.isArray(m.reasoning_details)) {
    for (const d of m.reasoning_details) {
      if (!isJsonObject(d)) continue;
      if (typeof d.text === 'string') details += d.text;
      if (typeof d.summary === 'string') details += d.summary;
    }
  }
  let longest = details;
  for (const v of [m.reasoning, m.reasoning_content]) if (typeof v === 'string' && v.length > longest.length) longest = v;
  return longest;
}
