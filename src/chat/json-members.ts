/**
 * The top-level members of a JSON object's text, found without parsing it, so that a relayed body
 * can be rewritten by splicing its text (a few fields replaced, a few dropped) instead of being
 * rebuilt and serialised again. The text must be valid JSON (it was parsed, or is parsed alongside):
 * the scanner trusts its structure and only finds where things are.
 */
export interface Member {
  /** The key, its escapes read (`"\u006dodel"` is the key `model`, as JSON.parse reads it). */
  key: string;
  /** Where the member starts (its key's opening quote). */
  start: number;
  /** Where its value starts. */
  valueStart: number;
  /** Just past its value. */
  end: number;
}

const QUOTE = 34;
const BACKSLASH = 92;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Just past the string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return text.length;
    let slashes = 0;
    while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** Just past the value that starts at `i`. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return stringEnd(text, i);
  if (c === 123 /* { */ || c === 91 /* [ */) {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) j = stringEnd(text, j) - 1;
      else if (d === 123 || d === 91) depth++;
      else if (d === 125 || d === 93) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  // A number, true, false or null.
  let j = i;
  while (j < text.length) {
    const d = text.charCodeAt(j);
    if (d === 44 /* , */ || d === 125 || d === 93 || isSpace(d)) break;
    j++;
  }
  return j;
}

/** The top-level members of the object `text`, in order; undefined when `text` is not an object. */
export function objectMembers(text: string): Member[] | undefined {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 123) return undefined;
  const members: Member[] = [];
  i = skipSpace(text, i + 1);
  while (i < text.length && text.charCodeAt(i) !== 125) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const keyEnd = stringEnd(text, i);
    const written = text.slice(i + 1, keyEnd - 1);
    const key = written.includes('\\') ? (JSON.parse(`"${written}"`) as string) : written;
    let j = skipSpace(text, keyEnd);
    if (text.charCodeAt(j) !== 58 /* : */) return undefined;
    j = skipSpace(text, j + 1);
    const end = valueEnd(text, j);
    members.push({ key, start: i, valueStart: j, end });
    i = skipSpace(text, end);
    if (text.charCodeAt(i) === 44) i = skipSpace(text, i + 1);
  }
  return members;
}

/**
 * The members of the object `text` rewritten, without braces: `head` (members' text, such as
 * `"id":"x","model":"m"`) first, then every member of `members` that `drop` does not name (by its key,
 * and its index among `members`), as written, then `tail`.
 */
export function spliceMembers(text: string, members: readonly Member[], head: string, drop: (key: string, index: number) => boolean, tail = ''): string {
  let out = head;
  let sep = head.length > 0;
  // Runs of kept members are copied as one slice, separators and all.
  let runStart = -1;
  let runEnd = -1;
  for (let i = 0; i < members.length; i++) {
    const m = members[i] as Member;
    if (drop(m.key, i)) {
      if (runStart >= 0) {
        out += (sep ? ',' : '') + text.slice(runStart, runEnd);
        sep = true;
        runStart = -1;
      }
      continue;
    }
    if (runStart < 0) runStart = m.start;
    runEnd = m.end;
  }
  if (runStart >= 0) {
    out += (sep ? ',' : '') + text.slice(runStart, runEnd);
    sep = true;
  }
  if (tail.length > 0) out += (sep ? ',' : '') + tail;
  return out;
}

/** The object `text` rewritten as spliceMembers rewrites its members, in braces. */
export function spliceObject(text: string, members: readonly Member[], head: string, drop: (key: string, index: number) => boolean, tail = ''): string {
  return `{${spliceMembers(text, members, head, drop, tail)}}`;
}

/**
 * Whether a key appears twice among the members. JSON.parse keeps the last of them and another reader
 * may keep the first: a text that has them is rebuilt from what was parsed rather than spliced.
 */
export function hasDuplicateKeys(members: readonly Member[]): boolean {
  // A chunk has a dozen members or so: comparing pairs costs less than building a set.
  if (members.length > 32) return new Set(members.map((m) => m.key)).size !== members.length;
  for (let i = 1; i < members.length; i++) {
    const key = (members[i] as Member).key;
    for (let j = 0; j < i; j++) if ((members[j] as Member).key === key) return true;
  }
  return false;
}

/**
 * Whether a member's key is one of `names`, compared one by one: a key is a substring cut from the
 * text, new each time, which a Set would hash on every lookup; a few short comparisons cost less.
 */
export function keyIn(names: readonly string[]): (key: string) => boolean {
  return (key) => {
    for (const name of names) if (name === key) return true;
    return false;
  };
}
