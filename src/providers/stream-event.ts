import { deliveredBody, deliveredTexts, type ChoiceDelivered, type DeliveredBody } from './delivered-text.js';
import type { Chunk, ParsedStreamEvent } from './provider.js';
import { usageOf } from './usage.js';
import { utf8Bytes, type Utf8Bytes } from '../utf8-bytes.js';

type Obj = Record<string, unknown>;

/** Whether a chunk carries output: text, reasoning, a tool call or a finish reason. */
function carriesOutput(choices: unknown): boolean {
  if (!Array.isArray(choices)) return false;
  for (const c of choices as Obj[]) {
    if (!c || typeof c !== 'object') continue;
    if (c.finish_reason) return true;
    const d = c.delta as Obj | undefined;
    if (d && typeof d === 'object' && (d.content || d.reasoning || d.reasoning_content || (Array.isArray(d.tool_calls) && d.tool_calls.length > 0)))
      return true;
  }
  return false;
}

/** The finish reason of an answer's or chunk's first choice, if it carries one. */
export function finishReasonOf(choices: unknown): string | undefined {
  const first = Array.isArray(choices) ? (choices[0] as Obj | undefined) : undefined;
  return first && typeof first === 'object' && typeof first.finish_reason === 'string' ? first.finish_reason : undefined;
}

/** One stream event of a parsed chunk: the chunk's text (its bytes) and what the gateway reads from it. */
export function streamEvent(text: Utf8Bytes, chunk: Chunk): ParsedStreamEvent {
  const d = choiceDelivered(deliveredTexts(chunk));
  return {
    text,
    chunk,
    usage: usageOf(chunk),
    finishReason: finishReasonOf(chunk.choices),
    output: carriesOutput(chunk.choices),
    delivered: d.delivered,
    choice: d.choice,
    deliveredByChoice: d.deliveredByChoice,
  };
}

const NOTHING: ChoiceDelivered = { delivered: '' as DeliveredBody, choice: 0, deliveredByChoice: undefined };

/** What a chunk delivered, as an event carries it: to one choice (most chunks), or to each of several. */
function choiceDelivered(texts: Map<number, string>): ChoiceDelivered {
  if (texts.size === 0) return NOTHING;
  if (texts.size === 1) for (const [choice, text] of texts) return { delivered: deliveredBody(text), choice, deliveredByChoice: undefined };
  const byChoice = new Map<number, DeliveredBody>();
  for (const [choice, text] of texts) byChoice.set(choice, deliveredBody(text));
  return { delivered: '' as DeliveredBody, choice: 0, deliveredByChoice: byChoice };
}

/** The stream event of a chunk the gateway made itself (a whole answer replayed as a stream, the demo provider). */
export function chunkEvent(chunk: Chunk): ParsedStreamEvent {
  return streamEvent(utf8Bytes(JSON.stringify(chunk)), chunk);
}
