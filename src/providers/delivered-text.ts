import { isJsonObject, type JsonObject } from '../json-object.js';
import { utf8Bytes, utf8Text, type Utf8Bytes } from '../utf8-bytes.js';
import type { Chunk } from './provider.js';

/**
 * What a stream delivered is kept as the body of a JSON string (its escapes as the upstream wrote
 * them), in UTF-8 bytes: a plain chunk's text is cut from its bytes as it is, and the bodies of a
 * stream's chunks, one after another, are the body of one string. It is read (`deliveredOf`) only when
 * it has to be counted, and then read whole, so that a character the upstream escaped in two halves
 * over two chunks (`\ud83d`, then `\ude00`) is one character, as it was when the text was read a
 * chunk at a time.
 */
export type DeliveredBody = Utf8Bytes;

/** `text` as a DeliveredBody. */
export function deliveredBody(text: string): DeliveredBody {
  return text.length === 0 ? (text as DeliveredBody) : utf8Bytes(JSON.stringify(text).slice(1, -1));
}

/** The text a DeliveredBody holds. */
export function deliveredOf(body: DeliveredBody): string {
  return body.length === 0 ? '' : (JSON.parse(`"${utf8Text(body)}"`) as string);
}

/**
 * The index a chunk's choice names: which of an `n` > 1 stream's answers its delta adds to. One that
 * names none a number could be (absent, negative, not a whole number) is taken for the first.
 */
function choiceIndex(c: unknown): number {
  const index = isJsonObject(c) ? c.index : undefined;
  return typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 ? index : 0;
}

/**
 * Text a chunk delivered (content, reasoning, tool calls) to each choice, by the choice's index, for
 * counting when no usage came or a stream was cut short. A choice that delivered nothing is left out.
 */
export function deliveredTexts(chunk: Chunk): Map<number, string> {
  const texts = new Map<number, string>();
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  for (const c of choices) {
    const text = choiceText(c, 'delta');
    if (text.length === 0) continue;
    const index = choiceIndex(c);
    texts.set(index, (texts.get(index) ?? '') + text);
  }
  return texts;
}

/** What a stream event delivered: what is counted when no usage comes or a stream is cut short. */
export interface ChoiceDelivered {
  /** The text it delivered (content, a refusal, reasoning, tool calls), as a JSON string's body (read only when counted). */
  delivered: DeliveredBody;
  /** The index of the choice `delivered` went to: a chunk of an `n` > 1 stream carries one answer's delta, each counted on its own. */
  choice: number;
  /** A chunk that delivered text to more than one choice: each one's, by index (`delivered` is then empty). */
  deliveredByChoice: ReadonlyMap<number, DeliveredBody> | undefined;
}

/**
 * What a stream delivered, a text a choice: each counted on its own, as a whole answer's choices are
 * (answerTexts), so that an `n` > 1 stream, whose chunks interleave its answers, is charged what the
 * same answers cost whole. The first choice's text is kept apart from any other's (most streams
 * have no other).
 */
export class DeliveredChoices {
  private first = '' as DeliveredBody;
  private others: Map<number, DeliveredBody> | undefined;

  /** Adds what an event delivered. */
  add(event: ChoiceDelivered): void {
    if (event.deliveredByChoice) for (const [choice, body] of event.deliveredByChoice) this.addTo(choice, body);
    else if (event.delivered.length > 0) this.addTo(event.choice, event.delivered);
  }

  /** Adds what another holds (after this one's texts, choice by choice). */
  addAll(other: DeliveredChoices): void {
    if (other.first.length > 0) this.addTo(0, other.first);
    if (other.others) for (const [choice, body] of other.others) this.addTo(choice, body);
  }

  /** Each choice's text (read: deliveredOf), in the order of their indexes. */
  texts(): string[] {
    const texts = [deliveredOf(this.first)];
    if (this.others) for (const choice of [...this.others.keys()].sort((a, b) => a - b)) texts.push(deliveredOf(this.others.get(choice) as DeliveredBody));
    return texts;
  }

  private addTo(choice: number, body: DeliveredBody): void {
    if (choice === 0) {
      this.first = (this.first + body) as DeliveredBody;
      return;
    }
    const others = (this.others ??= new Map());
    others.set(choice, ((others.get(choice) ?? '') + body) as DeliveredBody);
  }
}

/**
 * Text a whole answer delivered, for counting when no usage came, a text a choice (each counted on its
 * own, as `n` answers are): content (a string, or parts), a refusal, an audio answer's transcript,
 * reasoning (`reasoning`, `reasoning_content`, `reasoning_details`) and tool calls (each call's
 * function name and arguments), as a stream of the same answer delivers it. "Without usage from the
 * upstream, the delivered count includes reasoning text, streamed or not" (CONTRACT §7).
 */
export function answerTexts(body: Chunk): string[] {
  const choices = Array.isArray(body.choices) ? body.choices : [];
  return choices.map((c) => choiceText(c, 'message'));
}

/** The text of a choice's message (an answer) or delta (a chunk). */
function choiceText(c: unknown, key: 'message' | 'delta'): string {
  const m = isJsonObject(c) ? c[key] : undefined;
  if (!isJsonObject(m)) return '';
  let text = partsText(m.content);
  if (typeof m.refusal === 'string') text += m.refusal;
  if (isJsonObject(m.audio) && typeof m.audio.transcript === 'string') text += m.audio.transcript;
  text += reasoningText(m);
  // What the model wrote of a call: its name and its arguments (a stream sends the name once and the
  // arguments in pieces; the call's id, type and index are the API's framing, counted neither way).
  if (Array.isArray(m.tool_calls)) for (const call of m.tool_calls) if (isJsonObject(call)) text += functionText(call.function);
  return text + functionText(m.function_call);
}

/**
 * Content as text: a string, or parts (`{type: "text", text}`, `{type: "refusal", refusal}`, and
 * Mistral's `{type: "thinking", thinking: [parts]}`).
 */
function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'string') text += part;
    else if (isJsonObject(part)) {
      if (typeof part.text === 'string') text += part.text;
      if (typeof part.refusal === 'string') text += part.refusal;
      text += partsText(part.thinking);
    }
  }
  return text;
}

/** A function call's name and arguments, as far as it has them. */
function functionText(f: unknown): string {
  if (!isJsonObject(f)) return '';
  return (typeof f.name === 'string' ? f.name : '') + (typeof f.arguments === 'string' ? f.arguments : '');
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
