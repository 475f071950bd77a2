import type { FastifyRequest } from 'fastify';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authenticateKey } from '../src/http/auth.js';
import { hashApiKey } from '../src/security/api-key.js';

/** The token authenticateKey looked up for this Authorization header, or undefined when it found none. */
function presented(authorization: string | undefined): string | undefined {
  let looked: string | undefined;
  const ledger = {
    keyHashOfSecret: (secretHash: string) => {
      looked = secretHash;
      return undefined;
    },
    findKey: () => undefined,
  };
  const req = { headers: { authorization } } as unknown as FastifyRequest;
  expect(() => authenticateKey(req, ledger, { now: () => 0 } as never, 'inference')).toThrow(/API key/);
  return looked;
}

/** What the header's parse was before it was taken apart by hand: the regular expression's match. */
function byRegex(header: string): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header.trim())?.[1]?.trim();
}

describe('the bearer token of an Authorization header', () => {
  it('takes "Bearer" in any case, then blanks, then the token; anything else presents no key', () => {
    expect(presented('Bearer sk-1')).toBe(hashApiKey('sk-1'));
    expect(presented('  bearer \t sk-2  ')).toBe(hashApiKey('sk-2'));
    expect(presented('BEARER sk 3')).toBe(hashApiKey('sk 3'));
    for (const none of [undefined, '', 'Bearer', 'Bearer   ', 'Bearersk-1', 'Basic abc', 'sk-1']) expect(presented(none)).toBeUndefined();
  });

  it('reads every header as the regular expression it replaced did', () => {
    const header = fc.oneof(
      fc.string(),
      fc.tuple(fc.constantFrom('Bearer', 'bearer', 'BeArEr', 'Bear', ''), fc.constantFrom('', ' ', '\t', '  \t'), fc.string()).map(([a, b, c]) => a + b + c),
    );
    fc.assert(
      fc.property(header, (h) => {
        const expected = byRegex(h);
        expect(presented(h)).toBe(expected === undefined || expected === '' ? undefined : hashApiKey(expected));
      }),
      { numRuns: 2000 },
    );
  });
});
