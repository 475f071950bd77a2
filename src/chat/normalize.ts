import type { TokenUsage } from '../ledger/pricing.js';
import { billedCompletionTokens } from '../ledger/pricing.js';
import { creditsToJson, type Nano } from '../ledger/money.js';
import type { Chunk, ParsedStreamEvent, StreamEvent } from '../providers/provider.js';
import type { ErrorMetadata } from '../error-body.js';
import { isJsonObject } from '../json-object.js';
import { jsonString } from '../json-string.js';
import { utf8Bytes, type Utf8Bytes } from '../utf8-bytes.js';
import type { ChatCompletionChunkJson, ChatCompletionJson, ChatUsageJson } from './answer-schemas.js';
import { hasDuplicateKeys, keyIn, objectMembers, spliceObject } from './json-members.js';

/** Who served a request, as the answer reports it. */
export interface Served {
  id: string;
  model: string;
  provider: string;
  created: number;
}

type Obj = Record<string, unknown>;

/** The answer's `usage`: billed token counts and the cost charged, as OpenRouter reports them. */
export function usageBody(usage: TokenUsage, cost: Nano, isByok: boolean, upstream?: unknown): ChatUsageJson {
  const completion = billedCompletionTokens(usage);
  const out: ChatUsageJson = {
    prompt_tokens: usage.promptTokens,
    completion_tokens: completion,
    total_tokens: usage.promptTokens + completion,
    cost: creditsToJson(cost),
    is_byok: isByok,
  };
  if (isJsonObject(upstream)) {
    // Relayed only when they are counts (a whole number, not negative): OpenRouter's schema has them so.
    const cached = isJsonObject(upstream.prompt_tokens_details) ? upstream.prompt_tokens_details.cached_tokens : undefined;
    if (isCount(cached)) out.prompt_tokens_details = { cached_tokens: cached };
    const reasoning = isJsonObject(upstream.completion_tokens_details) ? upstream.completion_tokens_details.reasoning_tokens : undefined;
    if (isCount(reasoning)) out.completion_tokens_details = { reasoning_tokens: reasoning };
  }
  return out;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * The JSON text of `usageBody`'s answer, as JSON.stringify writes it (the same members in the same
 * order), written directly: it is made for every answer, and JSON.stringify's fixed cost is most of
 * what serialising so small an object costs.
 */
export function usageText(usage: ChatUsageJson): string {
  let text =
    `{"prompt_tokens":${jsonNumber(usage.prompt_tokens)},"completion_tokens":${jsonNumber(usage.completion_tokens)},` +
    `"total_tokens":${jsonNumber(usage.total_tokens)},"cost":${jsonNumber(usage.cost)},"is_byok":${usage.is_byok}`;
  if (usage.prompt_tokens_details) text += `,"prompt_tokens_details":{"cached_tokens":${jsonNumber(usage.prompt_tokens_details.cached_tokens)}}`;
  if (usage.completion_tokens_details) {
    text += `,"completion_tokens_details":{"reasoning_tokens":${jsonNumber(usage.completion_tokens_details.reasoning_tokens)}}`;
  }
  return `${text}}`;
}

/** A number as JSON writes it: its shortest text, or null where JSON has no number for it. */
function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/**
 * The members every answer and chunk starts with, after `"id":`: generation ids (generation-id.ts) are
 * base64url and digits, nothing JSON escapes, so they are quoted as they are.
 */
function idMembers(served: Served, object: string, created: number): string {
  return `"id":"${served.id}","object":"${object}","created":${created},"model":${jsonString(served.model)},"provider":${jsonString(served.provider)}`;
}

/** Fields that OpenAI-compatible upstreams send as null but OpenRouter's schema only allows absent. */
const NOT_NULLABLE = ['tool_calls', 'reasoning_details', 'images', 'audio', 'function_call', 'name'];

function normalizeChoices(choices: unknown, key: 'message' | 'delta'): Obj[] {
  if (!Array.isArray(choices)) return [];
  return choices.map((c, i) => {
    const choice: Obj = isJsonObject(c) ? { ...c } : {};
    choice.index = typeof choice.index === 'number' ? choice.index : i;
    if (!('finish_reason' in choice) || choice.finish_reason === undefined) choice.finish_reason = null;
    const inner = isJsonObject(choice[key]) ? { ...(choice[key] as Obj) } : {};
    for (const field of NOT_NULLABLE) if (inner[field] === null) delete inner[field];
    if (key === 'message') inner.role = 'assistant';
    else if ('role' in inner && inner.role !== 'assistant') delete inner.role;
    choice[key] = inner;
    return choice;
  });
}

/**
 * Whether one of NOT_NULLABLE's fields is null in `o`: each read by its name, where a loop over the
 * names made each a keyed load that V8 looks up the slow way (~140 instructions a field, a choice).
 */
function hasNullNotNullable(o: Obj): boolean {
  return o.tool_calls === null || o.reasoning_details === null || o.images === null || o.audio === null || o.function_call === null || o.name === null;
}

/** Whether normalizeChoices would leave `choices` as they are (so their text can be relayed as sent). */
function choicesClean(choices: unknown, key: 'message' | 'delta'): boolean {
  if (!Array.isArray(choices)) return false;
  for (const c of choices) {
    if (!isJsonObject(c) || typeof c.index !== 'number' || !('finish_reason' in c)) return false;
    const inner = c[key];
    if (!isJsonObject(inner) || hasNullNotNullable(inner)) return false;
    if (key === 'message' ? inner.role !== 'assistant' : 'role' in inner && inner.role !== 'assistant') return false;
  }
  return true;
}

/** A whole (non-streamed) upstream answer, rewritten as the gateway's own. */
export function normalizeAnswer(body: Chunk, served: Served, usage: ChatUsageJson): ChatCompletionJson {
  return { ...answerWithoutUsage(body, served), usage } as ChatCompletionJson;
}

/** `normalizeAnswer` but for its usage (which holds what the answer cost, known once it is charged). */
function answerWithoutUsage(body: Chunk, served: Served): Chunk {
  const out: Chunk = {
    ...body,
    id: served.id,
    object: 'chat.completion',
    created: typeof body.created === 'number' && body.created > 0 ? Math.floor(body.created) : served.created,
    model: served.model,
    provider: served.provider,
    system_fingerprint: typeof body.system_fingerprint === 'string' ? body.system_fingerprint : null,
    // The upstream's choices, relayed: each has its index, finish_reason and an assistant message.
    choices: normalizeChoices(body.choices, 'message') as ChatCompletionJson['choices'],
  };
  // The upstream's usage, and Groq's own (x_groq.usage), are not the gateway's: left out (as they are
  // from a stream's chunks).
  delete out.usage;
  delete out.x_groq;
  return out;
}

const answerReplaced = keyIn(['id', 'object', 'created', 'model', 'provider', 'system_fingerprint', 'usage', 'x_groq']);

/**
 * The text of `normalizeAnswer(body, served, usage)` for the usage it is given, made in two steps: all
 * of it but the usage now, the usage (which holds what the answer cost) once charged. So an answer
 * that cannot be written (nested too deeply for JSON.stringify) fails here, before it is charged. It
 * is spliced from the upstream's text when its choices need no change (the usual case): only the
 * gateway's fields are written anew.
 */
export function answerWriter(text: string, body: Chunk, served: Served): (usage: ChatUsageJson) => string {
  const members = choicesClean(body.choices, 'message') ? objectMembers(text) : undefined;
  if (!members || hasDuplicateKeys(members)) {
    const rebuilt = JSON.stringify(answerWithoutUsage(body, served));
    return (usage) => `${rebuilt.slice(0, -1)},"usage":${usageText(usage)}}`;
  }
  const created = typeof body.created === 'number' && body.created > 0 ? Math.floor(body.created) : served.created;
  const fingerprint = typeof body.system_fingerprint === 'string' ? body.system_fingerprint : null;
  const head = `${idMembers(served, 'chat.completion', created)},"system_fingerprint":${fingerprint === null ? 'null' : jsonString(fingerprint)}`;
  return (usage) => spliceObject(text, members, head, answerReplaced, `"usage":${usageText(usage)}`);
}

/** What every relayed chunk of a stream starts with, as bytes (a stream is relayed as its bytes: utf8-bytes.ts). */
export interface ChunkHead {
  /** The gateway's id, object, created, model and provider members. */
  members: Utf8Bytes;
  /** A plain chunk's event up to its own members: `data: {`, `members` and a comma. */
  plainEventStart: Utf8Bytes;
}

export function chunkHead(served: Served): ChunkHead {
  const members = utf8Bytes(idMembers(served, 'chat.completion.chunk', served.created));
  return { members, plainEventStart: `data: {${members},` as Utf8Bytes };
}

/** The text (bytes) of `usageChunk(served, usage)`, from the stream's `head`. */
export function usageChunkText(head: ChunkHead, usage: ChatUsageJson): Utf8Bytes {
  // The usage is numbers and booleans: ASCII, its own bytes.
  return `{${head.members},"choices":[],"usage":${usageText(usage)}}` as Utf8Bytes;
}

/**
 * A relayed event: `event`'s chunk as the gateway relays it, as one `data:` event, or undefined when
 * nothing is left to relay. A plain chunk (plain-chunk.ts: most of a stream), split so by its reader,
 * goes out behind `head`, in as few pieces as it can be (Node copies each piece); another is rewritten
 * by relayedChunkText.
 */
export function relayedEvent(event: StreamEvent, served: Served, head: ChunkHead): Utf8Bytes | undefined {
  if (event.plain !== undefined) return `${head.plainEventStart}${event.plain}}\n\n` as Utf8Bytes;
  const text = relayedChunkText(event, served, head);
  return text === undefined ? undefined : (`data: ${text}\n\n` as Utf8Bytes);
}

const chunkReplaced = keyIn(['id', 'object', 'created', 'model', 'provider', 'usage', 'x_groq']);

/**
 * The text (bytes) of `normalizeChunk(event.chunk, served)`, or undefined when nothing is left to
 * relay. A chunk whose choices need no change (the usual case) is spliced: `head` replaces the
 * upstream's own fields, the rest goes out as the upstream wrote it.
 */
export function relayedChunkText(event: ParsedStreamEvent, served: Served, head: ChunkHead): Utf8Bytes | undefined {
  const { chunk, text } = event;
  const choices = chunk.choices;
  // A chunk whose data came on several `data:` lines has line breaks between its tokens (a JSON string
  // holds none): spliced, they would end the relayed event's line. It is written anew instead.
  if (Array.isArray(choices) && choices.length > 0 && choicesClean(choices, 'delta') && !text.includes('\n')) {
    const members = objectMembers(text);
    if (members && !hasDuplicateKeys(members)) {
      const dropFingerprint = typeof chunk.system_fingerprint !== 'string';
      // Bytes spliced into bytes: the members are cut from the upstream's bytes at ASCII delimiters.
      return spliceObject(text, members, head.members, (key) => chunkReplaced(key) || (dropFingerprint && key === 'system_fingerprint')) as Utf8Bytes;
    }
  }
  const out = normalizeChunk(chunk, served);
  return out ? utf8Bytes(JSON.stringify(out)) : undefined;
}

/**
 * One upstream stream chunk as the gateway relays it, or undefined when nothing is left to relay
 * (a usage-only chunk: the gateway sends its own usage chunk with the cost at the end).
 */
export function normalizeChunk(chunk: Chunk, served: Served): ChatCompletionChunkJson | undefined {
  // The upstream's choices, relayed: each has its index, finish_reason and delta.
  const choices = normalizeChoices(chunk.choices, 'delta') as ChatCompletionChunkJson['choices'];
  if (choices.length === 0) return undefined;
  const out: ChatCompletionChunkJson = {
    ...chunk,
    id: served.id,
    object: 'chat.completion.chunk',
    created: served.created,
    model: served.model,
    provider: served.provider,
    choices,
  };
  delete out.usage;
  delete out.x_groq;
  if (typeof out.system_fingerprint !== 'string') delete out.system_fingerprint;
  return out;
}

/** The last chunk of every stream: no choices, the usage with its cost. */
export function usageChunk(served: Served, usage: ChatUsageJson): ChatCompletionChunkJson {
  return {
    id: served.id,
    object: 'chat.completion.chunk',
    created: served.created,
    model: served.model,
    provider: served.provider,
    choices: [],
    usage,
  };
}

/** The spec's mid-stream error event (CONTRACT §6). */
export function errorChunk(served: Served, code: number, message: string, metadata?: ErrorMetadata): ChatCompletionChunkJson {
  return {
    id: served.id,
    object: 'chat.completion.chunk',
    created: served.created,
    model: served.model,
    provider: served.provider,
    error: metadata ? { code, message, metadata } : { code, message },
    choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
  };
}
