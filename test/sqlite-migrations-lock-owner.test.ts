import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { migrateToLatest } from '../src/ledger/migrations.js';

// Starts on one SQLite file take turns on `<db>-migrations.lock` (migrations.ts). A lock file this user
// cannot write is one SQLite opens read-only without a word, and there BEGIN EXCLUSIVE excludes no one:
// two starts at once then ran the same migrations ("table accounts already exists"). So root (a CLI
// verb run with sudo) makes it as SQLite makes -wal and -shm, the database's owner's and mode; and a
// lock file another user made, which this one cannot write, stops the start, naming it.
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

function runAs(uid: number, script: string, url: string): Promise<string> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [script, url], { uid, gid: uid, env: { ...process.env, NODE_PATH: resolve('node_modules') } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', () => done(out.trim()));
  });
}

describe.skipIf(!asRoot)('the SQLite migrations lock file and its owner (these tests run as root, as CI does)', () => {
  it('root makes it with the database’s owner and mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-lockowner-'));
    const path = join(dir, 'ledger.db');
    writeFileSync(path, '');
    chownSync(path, NOBODY, NOBODY);
    chmodSync(path, 0o664);
    const db = openDatabase(`sqlite:${path}`);
    await migrateToLatest(db);
    await db.destroy();
    const lock = statSync(`${path}-migrations.lock`);
    expect({ uid: lock.uid, gid: lock.gid, mode: lock.mode & 0o777 }).toEqual({ uid: NOBODY, gid: NOBODY, mode: 0o664 });
  });

  it('a lock file this user cannot write stops both starts at once, naming it (neither migrates unlocked)', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-lockowner-'));
    chmodSync(dir, 0o777);
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      `import { openDatabase } from ${JSON.stringify(resolve('src/ledger/database.ts'))};
       import { migrateToLatest } from ${JSON.stringify(resolve('src/ledger/migrations.ts'))};
       const db = openDatabase(process.argv[2]);
       migrateToLatest(db).then(async () => { await db.destroy(); console.log('migrated'); }, (err) => { console.log('FAILED: ' + err.message); process.exit(1); });`,
    );
    const script = join(dir, 'start.cjs');
    await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', packages: 'external', outfile: script, logLevel: 'silent' });
    chmodSync(script, 0o755);
    const path = join(dir, 'ledger.db');
    // A lock file left by another user (root here, as an older build made it): 0644, not this user's.
    writeFileSync(`${path}-migrations.lock`, '', { mode: 0o644 });
    const answers = await Promise.all([runAs(NOBODY, script, `sqlite:${path}`), runAs(NOBODY, script, `sqlite:${path}`)]);
    for (const a of answers) expect(a).toMatch(/FAILED: the migrations lock .*ledger\.db-migrations\.lock cannot be written by this user/);
  });
});
