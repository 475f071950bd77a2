import type { Utf8Bytes } from '../utf8-bytes.js';
import type { PlainStreamEvent } from './provider.js';
import { deliveredOf, type DeliveredBody } from './delivered-text.js';

/**
 * Most chunks of a streamed answer carry a few words of text and nothing else the gateway must read
 * or change: one choice whose delta holds content or reasoning, no usage, no error; so does the
 * chunk that ends an answer with its finish reason (a plain word, `"stop"`, read from the match).
 * Such a chunk is recognised here by one regular expression over its text, compiled once by V8 to
 * native code, instead of being parsed, normalised and spliced member by member: the expression
 * admits only valid JSON of that shape (every string checked for escapes and control characters), so
 * what it accepts is relayed as it was sent, behind the gateway's own fields. Anything else (usage,
 * an error, tool calls, another field, other spacing or order) is parsed as before.
 * The chunk is read as its UTF-8 bytes (utf8-bytes.ts): the expression's string characters admit any
 * byte of a character beyond ASCII, and the reader made sure they are UTF-8.
 */
/**
 * A plain chunk read: the stream event it is (provider.ts), made here in one object (a chunk read and
 * then copied into its event cost two a chunk). `plain` holds the chunk's members other than the
 * upstream's own id, object, created, model and usage (null) and a null system_fingerprint, as
 * written, separated by commas: what follows the gateway's own fields in the relayed chunk. `delivered`
 * is the text it delivers (as a JSON string's body: delivered-text.ts): its content, then its
 * reasoning (the longer of its two names); `output` whether it carries output (non-empty content or
 * reasoning, or a finish reason), as stream-event.ts's carriesOutput reads a chunk; `finishReason` its
 * choice's, when it ends the answer (a plain word: one with escapes is left to the parser); `choice`
 * the index of its choice (an `n` > 1 stream's chunks each carry one of its answers).
 */
export type PlainChunk = PlainStreamEvent;

const STR = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
const NUM = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const STR_OR_NULL = `(?:${STR}|null)`;
const DELTA_MEMBER = `(?:"role":"assistant"|"(?:content|reasoning|reasoning_content)":${STR_OR_NULL}|"refusal":null)`;
/**
 * A delta: first the form most text chunks take, content alone (`{"content":"…"}`), whose text the
 * expression captures, then any other; the second alternative admits the first's texts too, so the
 * shapes admitted are the same, and a chunk of the first form is read without a second expression
 * over its choices (DELTA_TEXT: ~13,000 instructions a stream of the bench's 22 chunks).
 */
const DELTA = String.raw`(?:\{"content":(${STR})\}|\{(?:${DELTA_MEMBER}(?:,${DELTA_MEMBER})*)?\})`;
const CHOICE = String.raw`\{"index":(0|[1-9]\d{0,8}),"delta":${DELTA}(?:,"logprobs":null)?,"finish_reason":(?:null|"([a-z_]{1,32})")(?:,"logprobs":null)?\}`;
const FINGERPRINT = `,"system_fingerprint":${STR_OR_NULL}`;

/**
 * The members in the order OpenAI-compatible upstreams write them (OpenAI, DeepSeek, Groq, Mistral):
 * the upstream's own fields (HEAD), then (REST) the optional service tier and fingerprint, the
 * choices, then optionally usage (null), a fingerprint written after the choices, and OpenAI's
 * obfuscation padding. REST's groups: 1 service tier, 2 fingerprint before, 3 choices, 4 the choice's
 * index, 5 the content of a content-only delta and 6 the finish reason (in the choices), 7 fingerprint
 * after, 8 obfuscation.
 * An index of ten digits or more is left to the parser.
 */
const HEAD = String.raw`\{"id":${STR},"object":"chat\.completion\.chunk","created":${NUM},"model":${STR}`;
const REST = `((?:,"service_tier":${STR_OR_NULL})?)(${FINGERPRINT})?,("choices":\\[${CHOICE}\\])(?:,"usage":null)?(${FINGERPRINT})?((?:,"obfuscation":${STR})?)\\}$`;
/** A whole plain chunk; group 1 is its HEAD, REST's groups follow. */
const PLAIN = new RegExp(`^(${HEAD})${REST}`);
/** What follows a HEAD already read (sticky: from `lastIndex`). */
const PLAIN_AFTER_HEAD = new RegExp(REST, 'y');

/** The text members of a plain delta, each value as written (a string with its escapes, or null). */
const DELTA_TEXT = new RegExp(`"(content|reasoning|reasoning_content)":(${STR_OR_NULL})`, 'g');

const FINGERPRINT_NULL = ',"system_fingerprint":null';

/** A JSON string literal's body: its text, as a DeliveredBody (read only if it is counted). */
function stringBody(literal: string): DeliveredBody {
  return literal.slice(1, -1) as DeliveredBody;
}

function plain(text: Utf8Bytes, members: string, delivered: DeliveredBody, choice: number, finishReason: string | undefined): PlainChunk {
  return {
    text,
    plain: members as Utf8Bytes,
    usage: undefined,
    finishReason,
    output: delivered.length > 0 || finishReason !== undefined,
    delivered,
    choice,
    deliveredByChoice: undefined,
  };
}

/** The longer of two texts (by their length as text, as the parsing path compares them); `a` when as long. */
function longerText(a: DeliveredBody, b: DeliveredBody): DeliveredBody {
  if (a.length === 0 || b.length === 0) return a.length > 0 ? a : b;
  return deliveredOf(b).length > deliveredOf(a).length ? b : a;
}

/**
 * Longer chunks are left to the parser: a plain chunk holds a few words, and the expression's
 * backtracking over one string of megabytes overflows V8's regexp stack (a RangeError, not a miss).
 */
const MAX_PLAIN_LENGTH = 65_536;

/**
 * Reads a stream's chunks as plain chunks. The chunks of one stream repeat the upstream's own fields
 * (its id, created and model), which are most of a text chunk: once a chunk's were read, a chunk that
 * starts with the same text has only the rest read (what the whole expression would make of it is
 * the same: the fields end where they do whatever follows).
 */
export class PlainChunks {
  /** The upstream's fields (HEAD) of the last plain chunk, as written. */
  private head: string | undefined;

  /** The chunk's text (its bytes) read as a plain chunk, or undefined when it is not one (then it must be parsed). */
  read(text: Utf8Bytes): PlainChunk | undefined {
    if (text.length > MAX_PLAIN_LENGTH) return undefined;
    const head = this.head;
    // Not startsWith: TurboFan inlines that as a loop over both strings a character at a time (~7,000
    // instructions for this head here); a substring compared whole costs a few hundred.
    if (head !== undefined && text.length > head.length && text.substring(0, head.length) === head) {
      PLAIN_AFTER_HEAD.lastIndex = head.length;
      const rest = PLAIN_AFTER_HEAD.exec(text);
      return rest ? plainOf(text, rest, 1) : undefined;
    }
    const m = PLAIN.exec(text);
    if (!m) return undefined;
    this.head = m[1];
    return plainOf(text, m, 2);
  }
}

/** A chunk's text (its bytes) read as a plain chunk on its own, or undefined when it is not one. */
export function plainChunk(text: Utf8Bytes): PlainChunk | undefined {
  return new PlainChunks().read(text);
}

/** The plain chunk a match of REST's groups (from group `first` on) found. */
function plainOf(text: Utf8Bytes, m: RegExpExecArray, first: number): PlainChunk | undefined {
  const tier = m[first] ?? '';
  const before = m[first + 1];
  const choices = m[first + 2] ?? '';
  const index = m[first + 3];
  const choice = index === undefined || index === '0' ? 0 : Number(index);
  const onlyContent = m[first + 4];
  const finishReason = m[first + 5];
  const after = m[first + 6];
  const obfuscation = m[first + 7] ?? '';
  // A fingerprint written twice is left to the parser (JSON.parse keeps the last of two keys).
  if (before !== undefined && after !== undefined) return undefined;
  const fingerprint = before ?? after;
  const keptFingerprint = fingerprint === undefined || fingerprint === FINGERPRINT_NULL ? '' : fingerprint;
  // In the order written: tier and a fingerprint before the choices, or the choices and a fingerprint
  // after. Put together without a leading comma to cut off: a string put together is a tree of its
  // parts, and reading its first character made V8 copy the tree into one string first (a runtime
  // call, ~900 instructions a chunk), before the slice copied it again.
  const lead = before !== undefined ? tier + keptFingerprint : tier;
  const ahead = lead.length > 0 ? `${lead.slice(1)},${choices}` : choices;
  const members = (before !== undefined ? ahead : ahead + keptFingerprint) + obfuscation;
  if (onlyContent !== undefined) return plain(text, members, stringBody(onlyContent), choice, finishReason);
  // As JSON.parse would read the delta: the last of a key written twice.
  let content = '' as DeliveredBody;
  let reasoning = '' as DeliveredBody;
  let reasoningContent = '' as DeliveredBody;
  // An exec loop, not matchAll: matchAll's iterator and its arrays cost twice what the expression does.
  DELTA_TEXT.lastIndex = 0;
  for (let m = DELTA_TEXT.exec(choices); m !== null; m = DELTA_TEXT.exec(choices)) {
    const key = m[1];
    const literal = m[2] ?? 'null';
    const value = literal === 'null' ? ('' as DeliveredBody) : stringBody(literal);
    if (key === 'content') content = value;
    else if (key === 'reasoning') reasoning = value;
    else reasoningContent = value;
  }
  return plain(text, members, (content + longerText(reasoning, reasoningContent)) as DeliveredBody, choice, finishReason);
}
