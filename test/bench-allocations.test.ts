import { describe, expect, it } from 'vitest';
import { addAllocations, emptyTotals, type HeapProfileNode } from '../bench/lib/report.mjs';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
const frame = (functionName: string, url = '', lineNumber = 0): Frame => ({ functionName, url, lineNumber });
const node = (callFrame: Frame, selfSize: number, children: HeapProfileNode[] = []): HeapProfileNode => ({ callFrame, selfSize, children });

describe("the bench's allocation report (open-loop --alloc)", () => {
  it("gives a builtin's bytes to its nearest caller with a file, named after both, and to that caller's area", () => {
    const root = '/work/main';
    const charge = frame('charge', `file://${root}/dist/ledger/kysely-ledger.js`, 457);
    const profile = {
      head: node(frame('(root)'), 0, [node(charge, 100, [node(frame('set'), 64, [node(frame('(V8 API)'), 16)])]), node(frame('set'), 8)]),
    };
    const totals = addAllocations(emptyTotals(), profile, root);
    expect(totals.total).toBe(188);
    expect(totals.byFn.get('charge  dist/ledger/kysely-ledger.js:458')).toBe(100);
    expect(totals.byFn.get('set (builtin) in charge  dist/ledger/kysely-ledger.js:458')).toBe(64);
    expect(totals.byFn.get('(V8 API) (builtin) in charge  dist/ledger/kysely-ledger.js:458')).toBe(16);
    // No caller with a file: under its own name, as before.
    expect(totals.byFn.get('set  ')).toBe(8);
    expect(totals.byArea.get('tollgate dist/ledger')).toBe(180);
  });
});
