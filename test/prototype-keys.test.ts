import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mayNamePrototypeKeys } from '../src/http/prototype-keys.js';

/** `word` as a JSON key, each character written out or escaped (\uXXXX, hex in either case) as `escaped` says. */
function writtenAs(word: string, escaped: readonly number[]): string {
  return [...word]
    .map((ch, i) => {
      const how = escaped[i] ?? 0;
      if (how === 0) return ch;
      const hex = ch.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${how === 1 ? hex : hex.toUpperCase()}`;
    })
    .join('');
}

// The chat body's fast path (app.ts): a text this answers false for is taken as JSON.parse reads it,
// without Fastify's look for prototype keys. So it must answer true for every way of writing them.
describe('mayNamePrototypeKeys', () => {
  for (const word of ['__proto__', 'constructor']) {
    it(`is true for a text with a "${word}" key, however its characters are escaped`, () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: word.length, maxLength: word.length }), fc.string(), (escaped, around) => {
          const key = writtenAs(word, escaped);
          const text = `{"a":${JSON.stringify(around)},"${key}":{"prototype":{"x":1}}}`;
          expect(Object.keys(JSON.parse(text) as object)).toContain(word);
          expect(mayNamePrototypeKeys(text)).toBe(true);
        }),
      );
    });
  }

  it('is false for an ordinary chat body, which then skips the look', () => {
    const body = JSON.stringify({ model: 'demo/echo', messages: [{ role: 'user', content: 'Say hello in French, please.' }], max_tokens: 5 });
    expect(mayNamePrototypeKeys(body)).toBe(false);
  });
});
