// Imported: globalThis's Buffer is a getter, called on every use (bench/README.md, thirty-fifth session).
import { Buffer, isUtf8 } from 'node:buffer';

declare const utf8BytesBrand: unique symbol;

/**
 * UTF-8 bytes held in a string, one character a byte: what `buffer.toString('latin1')` reads and
 * `write(bytes, 'latin1')` writes back unchanged. A stream is relayed in this form: an upstream's
 * bytes are read without being decoded, the gateway's own fields are spliced in, and the bytes go
 * out without being measured and encoded again (a string of text costs Node a UTF-8 length pass and
 * an encoding pass on the way out). Text and bytes are told apart by type: `utf8Bytes` and
 * `utf8Text` convert, and either is the identity for ASCII, the usual case.
 */
export type Utf8Bytes = string & { readonly [utf8BytesBrand]: true };

/** The empty string, as bytes. */
export const NO_BYTES = '' as Utf8Bytes;

/** Whether `s` holds only ASCII characters (then it is its own UTF-8 bytes, and its own text). */
function isAscii(s: string): boolean {
  // Every character from U+0080 up takes two or more bytes in UTF-8 (a lone surrogate three).
  return Buffer.byteLength(s, 'utf8') === s.length;
}

/**
 * How to write `text`, whose UTF-8 length is `byteLength` (measured already, for a Content-Length):
 * an ASCII text is its own bytes, written as a copy ('latin1'), where 'utf8' encodes it a character
 * at a time (~2,000 instructions an answer of the bench's).
 */
export function encodingFor(text: string, byteLength: number): 'latin1' | 'utf8' {
  return byteLength === text.length ? 'latin1' : 'utf8';
}

/** The UTF-8 bytes of `text`. */
export function utf8Bytes(text: string): Utf8Bytes {
  return (isAscii(text) ? text : Buffer.from(text, 'utf8').toString('latin1')) as Utf8Bytes;
}

/** The text the UTF-8 bytes `bytes` encode. */
export function utf8Text(bytes: Utf8Bytes): string {
  return isAscii(bytes) ? bytes : Buffer.from(bytes, 'latin1').toString('utf8');
}

/** How many bytes at the end of `buf` begin a character that the next read completes (0 to 3). */
function splitCharacterBytes(buf: Buffer): number {
  const n = buf.length;
  // The usual end of a read: ASCII (an event's closing newline).
  if (n === 0 || (buf[n - 1] as number) < 0x80) return 0;
  // Back over continuation bytes (10xxxxxx) to the byte that leads the last character.
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const b = buf[i] as number;
    if ((b & 0xc0) === 0x80) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return n - i < length ? n - i : 0;
  }
  return 0;
}

/**
 * Buffer's own latin1 reader, which `toString('latin1')` calls after looking the encoding up and
 * checking its bounds (a third of what reading a stream's small reads cost): long part of Buffer, not
 * of its typings.
 */
interface Latin1Slicing {
  latin1Slice(start: number, end: number): string;
}

function latin1(buf: Buffer): Utf8Bytes {
  return (buf as Buffer & Latin1Slicing).latin1Slice(0, buf.length) as Utf8Bytes;
}

/**
 * The reads of a UTF-8 body as Utf8Bytes: a character split between two reads is kept for the next
 * one, and bytes that are not UTF-8 come out as U+FFFD (as a decoder would read them), so that what
 * is relayed is always UTF-8. A character left incomplete when the body ends is dropped.
 */
export class Utf8Reads {
  private split: Buffer | undefined;

  read(chunk: Buffer): Utf8Bytes {
    let buf = this.split ? Buffer.concat([this.split, chunk]) : chunk;
    this.split = undefined;
    const splitBytes = splitCharacterBytes(buf);
    if (splitBytes > 0) {
      this.split = Buffer.from(buf.subarray(buf.length - splitBytes));
      buf = buf.subarray(0, buf.length - splitBytes);
    }
    return latin1(isUtf8(buf) ? buf : Buffer.from(buf.toString('utf8'), 'utf8'));
  }
}
