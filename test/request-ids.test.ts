import { describe, expect, it } from 'vitest';
import { RequestIds } from '../src/http/request-ids.js';

// X-Request-Id names one request in the logs of every process behind one load balancer (CONTRACT §10).
describe('request ids', () => {
  it('are UUID-shaped, never repeat within a process, and differ between processes', () => {
    const one = new RequestIds();
    const other = new RequestIds();
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      for (const id of [one.next(), other.next()]) {
        expect(id).toMatch(/^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        seen.add(id);
      }
    }
    expect(seen.size).toBe(20_000);
  });
});
