// Issue 9's targets and the verdicts the bench's tables print on them (bench/README.md, "Reading the table").
import { fmt } from './report.mjs';

/** The targets for Tollgate's CPU per request, as a ratio to the bare pass-through. */
export const TARGETS = { sqlite: { json: 2, sse: 1.5 }, 'postgres-redis': { json: 4, sse: 3 } };
export const LATENCY_TARGET_MS = 2;
/**
 * The latency target's verdict. The bare proxy is the floor: when its p99 is above Tollgate's by more
 * than the target, something disturbed its rounds (a stall of the machine), the difference says
 * nothing, and the row says so rather than "met".
 */
export function latencyVerdict(l) {
  if (l.added_p99_ms < -LATENCY_TARGET_MS) return "unclear: bare p99 above Tollgate's";
  return l.added_p99_ms <= LATENCY_TARGET_MS ? 'met' : 'not met';
}

/**
 * The rounds (0-based) in which the bare proxy's own figure cannot be trusted: a proxy that does all it
 * does and more (the floor proxy, any Tollgate) read less CPU a request than it in the same round, so
 * something else on the machine slowed the bare proxy's turn. `fullerRuns`: each such proxy's rounds.
 */
export function disturbedRounds(fullerRuns, bareRuns) {
  return bareRuns.flatMap((bare, i) => (fullerRuns.some((runs) => runs[i].cpuUs < bare.cpuUs) ? [i] : []));
}

/**
 * Issue 9's verdict on a row's CPU ratio, from its rounds (each Tollgate round over the bare proxy's in
 * the same round): met when every round is at or under the target, not met when every round is over
 * it, and unclear when they fall on both sides: on a host whose speed moves between rounds, the median
 * alone could call either way (bench/README.md, "Reading the table"). A round whose bare figure was
 * disturbed (`leftOut`, disturbedRounds) is left out: a slowed bare proxy makes every ratio of that round
 * look better than it is. A verdict that rests on one round of several says so ("met on round 3 alone"):
 * one round is a reading, not a verdict the rounds agree on.
 */
export function cpuVerdict(ratioRounds, target, leftOut) {
  if (target === undefined) return undefined;
  const judged = ratioRounds.filter((_, i) => !leftOut.includes(i));
  const note =
    leftOut.length === 0
      ? ''
      : ` (left out: round${leftOut.length > 1 ? 's' : ''} ${leftOut.map((i) => i + 1).join(', ')}: the floor or a Tollgate read under the bare proxy)`;
  if (judged.length === 0) return `no reading: the floor or a Tollgate read under the bare proxy in every round`;
  const over = judged.filter((x) => x > target).length;
  const alone = judged.length === 1 && ratioRounds.length > 1 ? ` on round ${ratioRounds.findIndex((_, i) => !leftOut.includes(i)) + 1} alone` : '';
  if (over === 0) return `met${alone}${note}`;
  if (over === judged.length) return `not met${alone}${note}`;
  return `unclear: rounds ${fmt(Math.min(...judged), 2)}–${fmt(Math.max(...judged), 2)}×${note}`;
}
