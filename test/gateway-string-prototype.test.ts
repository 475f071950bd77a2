import { expect, it } from 'vitest';
import { startTestGateway } from './helpers/gateway.js';

/**
 * A gateway, with ioredis loaded (which leaves String.prototype slow: src/fast-string-prototype.ts),
 * starts with it fast: in a file of its own, so that nothing run before in this process restored it.
 */
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

it("a started gateway has String.prototype in V8's fast mode", async () => {
  await import('ioredis');
  const gw = await startTestGateway();
  try {
    expect(hasFastProperties(String.prototype)).toBe(true);
  } finally {
    await gw.close();
  }
});
