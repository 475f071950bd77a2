/**
 * Whether a JSON text could hold a `__proto__` or `constructor` key. Fastify's parser looks for them
 * with two regular expressions over the whole text after parsing it (~5,000 instructions a 1 KB chat
 * body, on every request). A key is either written out, and then the text holds "proto" or
 * "constructor", or has a character escaped, and JSON escapes a letter or an underscore only as
 * \uXXXX: a text with neither word and no "\u" names no such key, and JSON.parse's value of it is
 * what Fastify's parser would answer.
 */
export function mayNamePrototypeKeys(text: string): boolean {
  return text.includes('proto') || text.includes('constructor') || text.includes('\\u');
}
