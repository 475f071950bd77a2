/**
 * Puts V8's String.prototype back in fast mode. A class that extends String (ioredis's VerbatimString,
 * loaded with ioredis whatever the deployment) makes V8 set String.prototype up as a prototype, with
 * its properties in a dictionary, until an inline cache looks a property up through a String object.
 * Strings in the gateway's code are primitives, which never do: every method call on one (`charCodeAt`,
 * `indexOf`, `slice`, in the hot JSON and SSE scanners) then went through V8's generic property load,
 * ~40,000 instructions a request (bench/README.md, the twenty-eighth session). A few loads of a method
 * through a String object, from a function whose inline cache runs, make it fast again: V8 then
 * migrates the prototype back to fast properties.
 */
export function restoreFastStringPrototype(): void {
  const load = (s: string): unknown => s.charCodeAt;
  // V8 gives a function its inline caches once it has run a few times: enough runs for the last ones to use them.
  for (let i = 0; i < 32; i++) load(Object('') as string);
}
