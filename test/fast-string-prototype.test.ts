import { describe, expect, it } from 'vitest';
import { restoreFastStringPrototype } from '../src/fast-string-prototype.js';

/**
 * What V8 keeps String.prototype as decides whether every string method call in optimised code is a
 * direct call or a generic property load (src/fast-string-prototype.ts). Read with V8's own
 * %HasFastProperties (vitest runs with --allow-natives-syntax).
 */
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

describe("String.prototype stays in V8's fast mode", () => {
  it('a class extending String (as ioredis has one) leaves it slow; restoreFastStringPrototype makes it fast', () => {
    class Verbatim extends String {}
    void new Verbatim('x');
    expect(hasFastProperties(String.prototype)).toBe(false);
    restoreFastStringPrototype();
    expect(hasFastProperties(String.prototype)).toBe(true);
  });
});
