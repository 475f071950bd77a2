// Names for the JIT-compiled JavaScript in a callgrind dump. Valgrind knows V8's generated code only by
// its address (`fn=(ID) 0x…`); node with --perf-basic-prof writes /tmp/perf-PID.map, one line a code
// object (functions, regular expressions, stubs): `START SIZE NAME` in hex, NAME such as
// `JS:*relay file:///…/dist/chat/chat-service.js:120:3` (`*` optimised by TurboFan, `^` by Sparkplug,
// `~` interpreted). nameJitCode rewrites each such address to the name of the code object
// that held it, so that callgrind_annotate lists (and sums) instructions by JavaScript function.
import { readFileSync, writeFileSync } from 'node:fs';

/** The perf map's code objects, sorted by start (a later line for the same range wins: code is reused). */
export function readPerfMap(file) {
  const entries = [];
  for (const [i, line] of readFileSync(file, 'utf8').split('\n').entries()) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.+)$/i.exec(line);
    if (m) entries.push({ start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[1]}`) + BigInt(`0x${m[2]}`), name: m[3], order: i });
  }
  return entries.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.order - b.order));
}

/** The name of the code object holding `addr` (a BigInt), or undefined. */
export function nameAt(entries, addr) {
  let lo = 0;
  let hi = entries.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid].start <= addr) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // The latest code object that starts at or before addr and still covers it (a few back at most).
  let best;
  for (let i = at; i >= 0 && i > at - 16; i--) {
    const e = entries[i];
    if (addr < e.end && (!best || e.order > best.order)) best = e;
  }
  return best?.name;
}

/** Writes `out`: the callgrind dump `dump` with each JIT address named from the perf map `perfMap`. Answers how many were named. */
export function nameJitCode(dump, perfMap, out) {
  const entries = readPerfMap(perfMap);
  let named = 0;
  const text = readFileSync(dump, 'utf8').replace(/^(c?fn=\(\d+\)) 0x([0-9a-f]+)$/gim, (all, head, hex) => {
    const name = nameAt(entries, BigInt(`0x${hex}`));
    if (!name) return all;
    named++;
    return `${head} ${name}`;
  });
  writeFileSync(out, text);
  return named;
}
