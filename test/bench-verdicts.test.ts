import { describe, expect, it } from 'vitest';
import { cpuVerdict, disturbedRounds, latencyVerdict } from '../bench/lib/verdicts.mjs';

const runs = (...cpuUs: number[]) => cpuUs.map((us) => ({ cpuUs: us }));

describe("the bench's verdicts on issue 9's targets", () => {
  it('judges a CPU row by every round: met, not met, or unclear when the rounds disagree', () => {
    expect(cpuVerdict([1.8, 1.95, 2], 2, [])).toBe('met');
    expect(cpuVerdict([2.1, 2.4, 3], 2, [])).toBe('not met');
    expect(cpuVerdict([1.36, 3.17, 1.52], 2, [])).toBe('unclear: rounds 1.36–3.17×');
    expect(cpuVerdict([1.2], undefined, [])).toBeUndefined();
  });

  it('finds the rounds whose bare proxy was slowed: the floor or a Tollgate, which do more, read less than it', () => {
    const bare = runs(38, 42, 60);
    expect(disturbedRounds([runs(53, 30, 60)], bare)).toEqual([1]);
    // Any of them: here a Tollgate in round 1, the floor in round 3.
    expect(disturbedRounds([runs(53, 60, 59), runs(30, 110, 130)], bare)).toEqual([0, 2]);
    expect(disturbedRounds([runs(53, 60, 61), runs(100, 110, 130)], bare)).toEqual([]);
    expect(disturbedRounds([], bare)).toEqual([]);
  });

  it('leaves such rounds out, says which, and gives no reading when none is left', () => {
    // Round 2's bare proxy was slowed: its 1.1× flattered Tollgate, and without it every round is over.
    expect(cpuVerdict([2.5, 1.1, 2.9], 2, [1])).toBe('not met (left out: round 2: the floor or a Tollgate read under the bare proxy)');
    expect(cpuVerdict([1.5, 2.4, 1.9], 2, [1])).toBe('met (left out: round 2: the floor or a Tollgate read under the bare proxy)');
    expect(cpuVerdict([1.5, 1.2, 2.4, 1.1], 2, [1, 3])).toBe(
      'unclear: rounds 1.50–2.40× (left out: rounds 2, 4: the floor or a Tollgate read under the bare proxy)',
    );
    expect(cpuVerdict([1.5, 1.2], 2, [0, 1])).toBe('no reading: the floor or a Tollgate read under the bare proxy in every round');
    // One round left to judge by: the verdict names it (2026-11-28: "met" on round 3 of 3 alone).
    expect(cpuVerdict([0.77, 2.05, 1.93], 2, [0, 1])).toBe('met on round 3 alone (left out: rounds 1, 2: the floor or a Tollgate read under the bare proxy)');
    expect(cpuVerdict([2.6, 1.1], 2, [1])).toBe('not met on round 1 alone (left out: round 2: the floor or a Tollgate read under the bare proxy)');
    expect(cpuVerdict([1.9], 2, [])).toBe('met');
  });

  it("calls the latency row unclear when the bare proxy's p99 is above Tollgate's by more than the target", () => {
    expect(latencyVerdict({ added_p99_ms: 1.5 })).toBe('met');
    expect(latencyVerdict({ added_p99_ms: 2.5 })).toBe('not met');
    expect(latencyVerdict({ added_p99_ms: -3 })).toBe("unclear: bare p99 above Tollgate's");
  });
});
