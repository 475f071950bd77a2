/**
 * A string as JSON text, what JSON.stringify(s) gives. JSON.stringify's fixed cost (~4,000 instructions
 * a call in V8 11: it sets up its serialiser in C++) is most of what quoting a short string costs, and
 * the chat route quoted several a request (the model, the provider, the fingerprint), so a string with
 * nothing JSON escapes (printable ASCII but `"` and `\`) is quoted here, the rest by JSON.stringify.
 */
export function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(s);
  }
  return `"${s}"`;
}
