import { isJsonObject, type JsonObject } from '../../json-object.js';
import type { Chunk } from '../provider.js';

/** Delta members whose pieces make one text: each chunk's piece is added to the ones before. */
const TEXT_MEMBERS = new Set(['content', 'reasoning', 'reasoning_content', 'refusal']);

interface ChoiceSoFar {
  message: JsonObject;
  toolCalls: JsonObject[];
  finishReason: unknown;
}

/** A streamed tool call's piece added to the call so far (its id and type once, its name and arguments in pieces). */
function addToolCall(calls: JsonObject[], piece: JsonObject): void {
  const at = typeof piece.index === 'number' ? piece.index : calls.length;
  const call = (calls[at] ??= { id: undefined, type: 'function', function: { name: '', arguments: '' } });
  if (typeof piece.id === 'string') call.id = piece.id;
  if (typeof piece.type === 'string') call.type = piece.type;
  const f = call.function as JsonObject;
  if (isJsonObject(piece.function)) {
    if (typeof piece.function.name === 'string') f.name = `${f.name as string}${piece.function.name}`;
    if (typeof piece.function.arguments === 'string') f.arguments = `${f.arguments as string}${piece.function.arguments}`;
  }
}

/**
 * A whole answer made of a streamed one's chunks, for an upstream that streamed an answer asked for
 * whole: each choice's message is its deltas added up (texts joined, tool calls joined by their
 * index, other members as the last delta gave them), its finish reason the last one given; the
 * answer's usage the last usage a chunk carried; its id, created and model the first chunk's.
 */
export function answerFromChunks(chunks: readonly Chunk[]): Chunk {
  const choices = new Map<number, ChoiceSoFar>();
  const answer: Chunk = { id: undefined, object: 'chat.completion', created: undefined, model: undefined };
  for (const chunk of chunks) {
    for (const key of ['id', 'created', 'model', 'system_fingerprint'] as const)
      if (answer[key] === undefined && chunk[key] !== undefined) answer[key] = chunk[key];
    if (chunk.usage !== undefined && chunk.usage !== null) answer.usage = chunk.usage;
    if (isJsonObject(chunk.x_groq) && chunk.x_groq.usage !== undefined) answer.x_groq = chunk.x_groq;
    for (const c of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if (!isJsonObject(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let so = choices.get(index);
      if (!so) choices.set(index, (so = { message: { role: 'assistant', content: null }, toolCalls: [], finishReason: null }));
      if (isJsonObject(c.delta)) {
        for (const [key, value] of Object.entries(c.delta)) {
          if (key === 'tool_calls' && Array.isArray(value)) {
            for (const piece of value) if (isJsonObject(piece)) addToolCall(so.toolCalls, piece);
          } else if (TEXT_MEMBERS.has(key)) {
            if (typeof value === 'string') so.message[key] = `${typeof so.message[key] === 'string' ? so.message[key] : ''}${value}`;
          } else if (value !== null && value !== undefined) so.message[key] = value;
        }
      }
      if (c.finish_reason !== null && c.finish_reason !== undefined) so.finishReason = c.finish_reason;
    }
  }
  answer.choices = [...choices.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, so]) => {
      const message: JsonObject = { ...so.message, role: 'assistant' };
      const calls = so.toolCalls.filter((call) => call !== undefined);
      if (calls.length > 0) message.tool_calls = calls;
      return { index, message, finish_reason: so.finishReason };
    });
  return answer;
}
