// Types of report.mjs's allocation totals, for the tests that import them.
export interface Totals {
  byFn: Map<string, number>;
  byArea: Map<string, number>;
  total: number;
}
export interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapProfileNode[];
}
export function emptyTotals(): Totals;
export function addAllocations(totals: Totals, profile: { head: HeapProfileNode }, root: string): Totals;
