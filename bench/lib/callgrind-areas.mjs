// Where a callgrind dump's instructions went, by area: each function's own (self) instructions, read with
// callgrind_annotate, put in the area its name says (JavaScript by its file, as the --profile and --perf
// reports do; the rest by what V8, Node or a library it is). Self counts only: callgrind's inclusive
// counts of JavaScript frames are not to be trusted (an async function's continuation runs from the
// microtask queue, not under its caller, and a stack check runs V8's interrupts, a compile job's
// installation or a collection, inside whichever function it happens to be in).
import { execFileSync } from 'node:child_process';
import { areaOfUrl, emptyTotals } from './report.mjs';

/** The area of a function callgrind names `name` (from `file:function`), in the object `object`. */
export function areaOfFunction(name, object, root) {
  const js = /^JS:[*^~+]?(\S*) (\S+?)(?::\d+:\d+)?$/.exec(name);
  if (js) return areaOfUrl(js[2], root);
  if (name.startsWith('JS:') || name.startsWith('RegExp:')) return name.startsWith('RegExp:') ? 'regular expressions' : 'JavaScript (other)';
  if (/^0x[0-9a-f]+$/i.test(name)) return 'JIT code (unnamed)';
  if (/^Builtins_/.test(name)) return 'V8 builtins';
  if (/v8::internal::Json(Parser|Stringifier)/.test(name)) return 'V8 JSON';
  if (
    /v8::internal::((compiler|maglev|baseline|interpreter)::|OptimizingCompileDispatcher|Compiler::|Parser::|ParserBase|Scanner::|BytecodeGenerator)/.test(name)
  )
    return 'V8 compiler';
  if (
    /v8::internal::(Heap|Scavenge|MarkCompact|Concurrent|Incremental|Sweeper|MemoryAllocator|Evacuat|MarkingVisitor|MainMarking|heap::)|heap::base::|cppgc::/.test(
      name,
    )
  )
    return 'V8 garbage collector';
  if (/^(v8::|node::|uv_|llhttp|__|std::)/.test(name) || object.includes('/node]')) {
    if (name.startsWith('uv_') || name.startsWith('uv__')) return 'libuv';
    if (name.startsWith('llhttp')) return 'llhttp';
    if (name.startsWith('node::')) return 'node C++';
    if (name.startsWith('v8::')) return 'V8 runtime';
    return 'node binary (other)';
  }
  if (object.includes('better_sqlite3')) return 'better-sqlite3 (SQLite)';
  if (object.includes('libc.so')) return 'libc';
  return (
    object
      .replace(/^\[|\]$/g, '')
      .split('/')
      .pop() || 'other'
  );
}

/**
 * Every function of the dump `file` as callgrind_annotate lists it: its instructions (its own, or with
 * `inclusive` those of what it called too), its name (`file:function` less the file, ??? for most) and
 * its object (`[/usr/bin/node]`, '' when none).
 */
export function annotatedFunctions(file, { inclusive = false } = {}) {
  const listing = execFileSync('callgrind_annotate', [`--inclusive=${inclusive ? 'yes' : 'no'}`, '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  const rows = [];
  for (const line of listing.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*?)(?: (\[[^\]]*\]))?$/.exec(line);
    if (!m || m[2] === 'PROGRAM TOTALS') continue;
    rows.push({ count: Number(m[1].replace(/,/g, '')), name: m[2].replace(/^[^:]*:/, ''), object: m[3] ?? '' });
  }
  return rows;
}

/** Self instructions of the dump `file` by area and by function, and in all. */
export function selfByArea(file, root) {
  const totals = emptyTotals();
  for (const { count, name, object } of annotatedFunctions(file)) {
    const area = areaOfFunction(name, object, root);
    totals.byArea.set(area, (totals.byArea.get(area) ?? 0) + count);
    totals.byFn.set(name, (totals.byFn.get(name) ?? 0) + count);
    totals.total += count;
  }
  return totals;
}
