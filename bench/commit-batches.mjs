#!/usr/bin/env node
// What a SQLite group commit costs by how many charges it carries: CPU µs a commit and a charge, for
// commits of 1 to 32 charges, on a fresh database in a temp dir, through the commit writer the gateway
// uses (dist/ledger/sqlite-commit-writer.js). A commit's fixed cost (its transaction, its locks and the
// pages it writes to the WAL) is shared by the charges it carries, which is why the ledger gathers the
// charges of requests that end together (KyselyLedger.gather). With --baseline DIR (a built checkout)
// the same is measured for that build, in alternating rounds.
//
//   npm run build && node bench/commit-batches.mjs [--sizes 1,4,8,16,32] [--charges 6000] [--rounds 3] [--baseline DIR]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchCharge } from './lib/charges.mjs';
import { parseOptions } from './lib/cli-options.mjs';

const opt = parseOptions('commit-batches', {
  sizes: { type: 'string', default: '1,4,8,16,32' },
  charges: { type: 'string', default: '6000' },
  rounds: { type: 'string', default: '3' },
  baseline: { type: 'string' },
});
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const builds = [['this build', root], ...(opt.baseline ? [['baseline', path.resolve(opt.baseline)]] : [])];
for (const [, dir] of builds) {
  if (!existsSync(path.join(dir, 'dist', 'ledger', 'sqlite-commit-writer.js'))) {
    process.stderr.write(`commit-batches: ${dir} has no dist/ledger/sqlite-commit-writer.js (build it first)\n`);
    process.exit(2);
  }
}
const sizes = opt.sizes.split(',').map(Number);
const CHARGES = Number(opt.charges);

async function load(dir) {
  const mod = (p) => import(pathToFileURL(path.join(dir, 'dist', 'ledger', p)).href);
  const [{ openDatabase, sqliteHandleOf }, { migrateToLatest }, { sqliteCommitWriter }] = await Promise.all([
    mod('database.js'),
    mod('migrations.js'),
    mod('sqlite-commit-writer.js'),
  ]);
  return { openDatabase, sqliteHandleOf, migrateToLatest, writer: sqliteCommitWriter };
}

let n = 0;
const charge = (now) =>
  benchCharge({ id: `gen-${Math.floor(now / 1000)}-${String(n++).padStart(16, '0')}`, accountId: 'acct_bench', keyHash: 'k'.repeat(64), createdAt: now });

/** CPU µs a commit of `size` charges, on a fresh database (the same for every build and size). */
async function measure(build, size) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-commits-'));
  const db = build.openDatabase(`sqlite:${path.join(dir, 'ledger.db')}`);
  try {
    await build.migrateToLatest(db);
    build
      .sqliteHandleOf(db)
      .prepare(
        "INSERT INTO accounts (id, name, type, balance, total_purchased, total_usage, created_at) VALUES ('acct_bench', 'bench', 'prepaid', 1000000000000000, 0, 0, 0)",
      )
      .run();
    const commits = Math.max(1, Math.floor(CHARGES / size));
    // Warm-up: a tenth of the run, so that the statements are prepared and the pages cached.
    for (let i = 0; i < Math.ceil(commits / 10); i++)
      await build.writer.write(
        db,
        Array.from({ length: size }, () => charge(Date.now())),
        [],
      );
    const before = process.cpuUsage();
    for (let i = 0; i < commits; i++)
      await build.writer.write(
        db,
        Array.from({ length: size }, () => charge(Date.now())),
        [],
      );
    const used = process.cpuUsage(before);
    return (used.user + used.system) / commits;
  } finally {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

const loaded = await Promise.all(builds.map(async ([label, dir]) => [label, await load(dir)]));
const results = new Map(); // `${label}|${size}` → µs per commit, per round
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const size of sizes) {
    for (const [label, build] of round % 2 ? [...loaded].reverse() : loaded) {
      const k = `${label}|${size}`;
      results.set(k, [...(results.get(k) ?? []), await measure(build, size)]);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`SQLite group commit, CPU µs (median of ${opt.rounds} rounds of ${CHARGES} charges), node ${process.version}`);
console.log(['build'.padEnd(12), 'charges/commit'.padStart(14), 'µs/commit'.padStart(10), 'µs/charge'.padStart(10)].join('  '));
for (const size of sizes) {
  for (const [label] of loaded) {
    const perCommit = median(results.get(`${label}|${size}`));
    console.log([label.padEnd(12), String(size).padStart(14), perCommit.toFixed(0).padStart(10), (perCommit / size).toFixed(1).padStart(10)].join('  '));
  }
}
