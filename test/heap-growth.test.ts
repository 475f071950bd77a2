import { describe, expect, it } from 'vitest';
import { limitHeapGrowth } from '../src/observability/heap-growth.js';

// Issue 9: the soak's memory bound comes from the gateway setting V8's heap growth when it starts
// serving (measured by `npm run bench:soak`, not here); an operator's own setting wins.
describe('heap growth', () => {
  it("is set when the gateway starts, unless node was given the operator's own", () => {
    expect(limitHeapGrowth(['--heap-growing-percent=300'])).toBe(false);
    expect(limitHeapGrowth(['--heap_growing_percent=300'])).toBe(false);
    expect(limitHeapGrowth(['--max-old-space-size=512'])).toBe(true);
  });
});
