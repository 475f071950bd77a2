import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from './helpers/sse.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';

const run = promisify(execFile);
const CLI = join(process.cwd(), 'dist', 'cli.js');
const ADMIN = 'cli-admin-token-0123456789abcdef';

function writeConfig(dir: string, extra = ''): string {
  const file = join(dir, 'tollgate.yaml');
  writeFileSync(
    file,
    `listen: { host: 127.0.0.1, port: 0 }
database_url: sqlite:${join(dir, 'ledger.db')}
admin_token: \${CLI_TEST_ADMIN}
providers:
  - { id: demo, type: demo, token_latency_ms: 40 }
models:
  - id: demo/echo
    endpoints:
      - { provider: demo, model: echo, pricing: { prompt: "0.000001", completion: "0.000002" } }
${extra}`,
  );
  return file;
}

const env = { ...process.env, CLI_TEST_ADMIN: ADMIN };
/** Runs an admin verb with --json and reads its answer. */
async function cli(...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [CLI, ...args, ...(args[0] === 'admin-token' ? [] : ['--json'])], { env });
  return JSON.parse(stdout);
}

/** Runs a verb as a person would (no --json) and answers what it printed. */
async function cliText(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args], { env });
  return stdout;
}

/** Starts `tollgate serve` and resolves with its base URL once it prints that it listens. */
function serve(config: string): Promise<{ proc: ChildProcess; base: string; output: () => string }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve({ proc, base: m[1] as string, output: () => out });
    });
    proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

describe('the tollgate command', () => {
  let dir: string;
  let config: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
    config = writeConfig(dir);
  });

  it('refuses a bad config, naming the key and what is wrong', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'listen: { port: "eighty" }\nlimits: { in_flight: { fraction: 2 } }\n');
    const err = await run(process.execPath, [CLI, 'serve', '--config', bad], { env }).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(/listen\.port: .*number/);
    expect((err as { stderr: string }).stderr).toMatch(/limits\.in_flight\.fraction: /);
    expect((err as { stderr: string }).stderr).not.toMatch(/\s+at .*\.js:\d+/);
  });

  let accountId: string;
  let key: string;

  it('admin verbs create an account, credits and a key in the ledger the config names', { timeout: 60_000 }, async () => {
    const account = await cli('accounts', 'create', '--name', 'cli', '--config', config);
    accountId = account.id;
    const credited = await cli('credits', 'add', accountId, '2.5', '--config', config);
    expect(credited).toMatchObject({ balance: 2.5, total_purchased: 2.5 });
    const created = await cli('keys', 'create', accountId, '--name', 'k1', '--limit', '1', '--limit-reset', 'weekly', '--config', config);
    key = created.key;
    expect(created.data).toMatchObject({ name: 'k1', limit: 1, limit_reset: 'weekly' });
    const listed = await cli('keys', 'list', accountId, '--config', config);
    expect(listed).toHaveLength(1);
    const disabled = await cli('keys', 'disable', created.data.hash, '--config', config);
    expect(disabled.disabled).toBe(true);
    expect((await cli('keys', 'enable', created.data.hash, '--config', config)).disabled).toBe(false);
    const err = await run(process.execPath, [CLI, 'credits', 'add', accountId, '0.0000000001', '--config', config], { env }).catch(
      (e: { stderr: string }) => e,
    );
    expect((err as { stderr: string }).stderr).toMatch(/amount: must have at most 9 decimals/);
  });

  it('issue 10: prints tables for people by default, and JSON with --json', { timeout: 60_000 }, async () => {
    const shown = await cliText('accounts', 'show', accountId, '--config', config);
    expect(shown).toMatch(new RegExp(`^id\\s+${accountId}$`, 'm'));
    expect(shown).toMatch(/^balance\s+2\.5$/m);
    const listed = await cliText('keys', 'list', accountId, '--config', config);
    const [header, ...rows] = listed.trim().split('\n');
    expect(header).toMatch(/^HASH\s+NAME\s+LABEL/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('k1');
    const created = await cliText('keys', 'create', accountId, '--name', 'shown-once', '--config', config);
    expect(created).toMatch(/^key \(shown once, store it now\): sk-tg-v1-[0-9a-f]+$/m);
    expect(() => JSON.parse(shown)).toThrow();
  });

  it('issue 10: --version prints the version of package.json', async () => {
    const { stdout } = await run(process.execPath, [CLI, '--version'], { env });
    const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { version: string };
    expect(stdout.trim()).toBe(pkg.version);
  });

  it('issue 10: byok set reads the key from a file or standard input, stores it sealed, and byok delete removes it', { timeout: 60_000 }, async () => {
    const secret = 'sk-provider-secret-0123456789';
    const keyFile = join(dir, 'provider.key');
    writeFileSync(keyFile, `${secret}\n`);
    expect(await cli('byok', 'set', accountId, 'demo', '--key-file', keyFile, '--config', config)).toEqual({
      account: accountId,
      provider: 'demo',
      stored: true,
    });
    const stored = () => {
      const db = new Database(join(dir, 'ledger.db'), { readonly: true });
      try {
        return db.prepare('select provider, ciphertext from byok_secrets where account_id = ?').all(accountId) as Array<{
          provider: string;
          ciphertext: string;
        }>;
      } finally {
        db.close();
      }
    };
    expect(stored()).toHaveLength(1);
    const first = stored()[0];
    expect(first?.ciphertext).not.toContain(secret);
    // From standard input, as `tollgate byok set … < file` or a pipe.
    await new Promise<void>((resolve, reject) => {
      const child = execFile(process.execPath, [CLI, 'byok', 'set', accountId, 'demo', '--config', config, '--json'], { env }, (err) =>
        err ? reject(err) : resolve(),
      );
      child.stdin?.end(`${secret}-2\n`);
    });
    // Replaced: still one key for the provider, sealed anew.
    expect(stored()).toHaveLength(1);
    expect(stored()[0]?.ciphertext).not.toBe(first?.ciphertext);
    expect(await cli('byok', 'delete', accountId, 'demo', '--config', config)).toEqual({ account: accountId, provider: 'demo', deleted: true });
    expect(stored()).toEqual([]);
  });

  let rotated: { old: string; current: string };

  it('keys create --management makes a management key, and --expires-at sets an expiry', { timeout: 60_000 }, async () => {
    const made = await cli('keys', 'create', accountId, '--management', '--name', 'ops', '--config', config);
    expect(made.key).toMatch(/^sk-tg-v1-/);
    expect(made.data).toMatchObject({ name: 'ops', management: true });
    const expiring = await cli('keys', 'create', accountId, '--expires-at', '2099-01-01T00:00:00Z', '--config', config);
    expect(expiring.data).toMatchObject({ management: false, expires_at: '2099-01-01T00:00:00.000Z' });
  });

  it('keys update changes the name, limit, reset and expiry, and none clears them', { timeout: 60_000 }, async () => {
    const { data } = await cli('keys', 'create', accountId, '--config', config);
    const updated = await cli(
      'keys',
      'update',
      data.hash,
      '--name',
      'renamed',
      '--limit',
      '3',
      '--limit-reset',
      'monthly',
      '--expires-at',
      '2099-06-01T00:00:00Z',
      '--config',
      config,
    );
    expect(updated).toMatchObject({ hash: data.hash, name: 'renamed', limit: 3, limit_reset: 'monthly', expires_at: '2099-06-01T00:00:00.000Z' });
    const cleared = await cli('keys', 'update', data.hash, '--limit', 'none', '--limit-reset', 'none', '--expires-at', 'none', '--config', config);
    expect(cleared).toMatchObject({ name: 'renamed', limit: null, limit_reset: null, expires_at: null });
    const err = (await run(process.execPath, [CLI, 'keys', 'update', data.hash, '--expires-at', '2001-01-01T00:00:00Z', '--config', config], { env }).catch(
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/expires_at: must be in the future/);
    const none = (await run(process.execPath, [CLI, 'keys', 'update', data.hash, '--config', config], { env }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/nothing to change/);
  });

  it('keys rotate prints a new secret for the same key; --grace is checked', { timeout: 60_000 }, async () => {
    const { key: old, data } = await cli('keys', 'create', accountId, '--name', 'rotating', '--limit', '2', '--config', config);
    const out = await cli('keys', 'rotate', data.hash, '--grace', '0', '--config', config);
    expect(out.key).toMatch(/^sk-tg-v1-/);
    expect(out.key).not.toBe(old);
    expect(out.data).toMatchObject({ hash: data.hash, name: 'rotating', limit: 2 });
    rotated = { old, current: out.key };
    const err = (await run(process.execPath, [CLI, 'keys', 'rotate', data.hash, '--grace', 'soon', '--config', config], { env }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/grace_seconds: /);
  });

  it('every keys verb has a description', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'keys', '--help'], { env });
    for (const verb of ['create', 'list', 'update', 'rotate', 'disable', 'enable', 'delete']) {
      expect(stdout).toMatch(new RegExp(`^\\s+${verb} .*\\S\\s{2,}\\S`, 'm'));
    }
  });

  describe('serve', () => {
    let server: Awaited<ReturnType<typeof serve>>;
    beforeAll(async () => {
      server = await serve(config);
    });
    afterAll(() => {
      if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    });

    it('answers /health and serves the key made by the CLI', async () => {
      expect(await (await fetch(`${server.base}/health`)).json()).toEqual({ status: 'ok' });
      const res = await fetch(`${server.base}/api/v1/key`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
    });

    it('serves a rotated key by its new secret only', async () => {
      const status = async (k: string) => (await fetch(`${server.base}/api/v1/key`, { headers: { authorization: `Bearer ${k}` } })).status;
      expect(await status(rotated.current)).toBe(200);
      expect(await status(rotated.old)).toBe(401);
    });

    it('issue 10: backup copies the live ledger (WAL and all) into a file that opens with every generation in it', { timeout: 60_000 }, async () => {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${server.base}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'demo/echo', messages: [{ role: 'user', content: `hi ${i}` }] }),
        });
        expect(res.status).toBe(200);
      }
      const file = join(dir, 'backup.db');
      // The running gateway's journal file goes beside the copy (its charges are in the tables already).
      expect(await cliText('backup', file, '--config', config)).toMatch(
        /^backed up the ledger to .*backup\.db \(\d+ pages, and 1 charge journal files to .*backup\.db-charges\)$/m,
      );
      expect(readdirSync(`${file}-charges`)).toEqual(readdirSync(join(dir, 'ledger.db-charges')));
      const count = (path: string) => {
        const db = new Database(path, { readonly: true });
        try {
          return (db.prepare('select count(*) as n from generations').get() as { n: number }).n;
        } finally {
          db.close();
        }
      };
      expect(count(file)).toBe(count(join(dir, 'ledger.db')));
      expect(count(file)).toBeGreaterThanOrEqual(3);
      // A start on the copy applies its journal's charges, each once: nothing moves.
      const restored = new KyselyLedger(openDatabase(`sqlite:${file}`));
      expect(await restored.recoverJournal()).toBeGreaterThanOrEqual(3);
      await restored.close();
      expect(count(file)).toBe(count(join(dir, 'ledger.db')));
      // An existing file is never overwritten; a PostgreSQL ledger is pointed at pg_dump.
      const again = await run(process.execPath, [CLI, 'backup', file, '--config', config], { env }).catch((e: { code: number; stderr: string }) => e);
      expect((again as { stderr: string }).stderr).toMatch(/exists already/);
      const pgConfig = join(dir, 'pg.yaml');
      writeFileSync(pgConfig, 'database_url: postgres://nobody@127.0.0.1:1/none\n');
      const pg = await run(process.execPath, [CLI, 'backup', join(dir, 'pg.db'), '--config', pgConfig], { env }).catch((e: { stderr: string }) => e);
      expect((pg as { stderr: string }).stderr).toMatch(/pg_dump/);
    });

    it('on SIGTERM lets a running stream finish, settles its charge and exits 0', async () => {
      const before = (await cli('accounts', 'show', accountId, '--config', config)).total_usage as number;
      const res = await fetch(`${server.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo/echo', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(200);
      const exited = new Promise<number | null>((resolve) => server.proc.on('exit', (code) => resolve(code)));
      server.proc.kill('SIGTERM');
      const events = await readSse(res);
      expect(events.at(-1)).toBe('[DONE]');
      const cost = (events.at(-2) as { usage: { cost: number } }).usage.cost;
      expect(cost).toBeGreaterThan(0);
      expect(await exited).toBe(0);
      const account = await cli('accounts', 'show', accountId, '--config', config);
      expect(Math.round((account.total_usage - before) * 1e9)).toBe(Math.round(cost * 1e9));
      expect(server.output()).not.toContain(ADMIN);
      expect(server.output()).not.toContain(key);
    });
  });

  it('issue 10: accounts list, generations and report (table, --json and --csv) read what was served', { timeout: 60_000 }, async () => {
    const listed = await cli('accounts', 'list', '--search', 'CL', '--config', config);
    expect(listed.total).toBeGreaterThanOrEqual(1);
    expect(listed.data.map((a: { id: string }) => a.id)).toContain(accountId);
    expect(await cliText('accounts', 'list', '--config', config)).toMatch(/^ID\s+NAME\s+TYPE\s+BALANCE/m);

    const gens = await cli('generations', accountId, '--status', 'completed', '--config', config);
    expect(gens.data.length).toBeGreaterThanOrEqual(3);
    expect(gens.data[0]).toMatchObject({ model: 'demo/echo', provider: 'demo', status: 'completed' });
    expect(await cliText('generations', accountId, '--limit', '1', '--config', config)).toMatch(/^ID\s+KEY_HASH\s+MODEL/m);

    const report = await cli('report', '--account', accountId, '--by', 'key,model', '--config', config);
    expect(report.bucket).toBe('day');
    const requests = report.data.reduce((n: number, r: { requests: number }) => n + r.requests, 0);
    expect(requests).toBe(gens.data.length);
    const account = await cli('accounts', 'show', accountId, '--config', config);
    const cost = report.data.reduce((n: number, r: { cost: number }) => n + Math.round(r.cost * 1e9), 0);
    expect(cost).toBe(Math.round(account.total_usage * 1e9));
    const text = await cliText('report', '--account', accountId, '--by', 'model', '--csv', '--config', config);
    const [header, ...rows] = text.trim().split('\n');
    expect(header).toBe('start,model,requests,cost,byok_usage,prompt_tokens,completion_tokens');
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toMatch(/^\d{4}-\d{2}-\d{2}T00:00:00\.000Z,demo\/echo,\d+,/);
    const bad = await run(process.execPath, [CLI, 'report', '--by', 'colour', '--config', config], { env }).catch((e: { code: number; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(2);
    expect((bad as { stderr: string }).stderr).toMatch(/by\.0: each must be one of account, key, model, provider/);
  });
});

describe('issue 7 item 10d: tollgate admin-token prints and never writes', () => {
  let dir: string;
  const noTokenConfig = () => {
    const file = join(dir, 'no-token.yaml');
    writeFileSync(
      file,
      `database_url: sqlite:${join(dir, 'data', 'ledger.db')}
providers:
  - { id: demo, type: demo }
models:
  - { id: demo/echo, endpoints: [{ provider: demo, model: echo }] }
`,
    );
    return file;
  };
  const storedTokens = () => {
    const db = new Database(join(dir, 'data', 'ledger.db'), { readonly: true });
    try {
      return db.prepare("select value from settings where name = 'admin_token'").all() as Array<{ value: string }>;
    } finally {
      db.close();
    }
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-admin-token-'));
  });

  it('says clearly that there is none, and creates nothing, before a token was ever stored', async () => {
    const config = noTokenConfig();
    const err = (await run(process.execPath, [CLI, 'admin-token', '--config', config], { env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    )) as { code: number; stdout: string; stderr: string };
    expect(err.code).not.toBe(0);
    expect(err.stdout).toBe('');
    expect(err.stderr).toMatch(/no admin token/i);
    expect(err.stderr).not.toMatch(/\s+at .*\.js:\d+/);
    expect(existsSync(join(dir, 'data', 'ledger.db'))).toBe(false);
  });

  it('prints the stored token, and writes nothing', async () => {
    const config = noTokenConfig();
    await cli('accounts', 'create', '--name', 'first start', '--config', config); // stores a generated token
    const stored = storedTokens();
    expect(stored).toHaveLength(1);
    const printed = await cli('admin-token', '--config', config);
    expect(printed).toEqual({ admin_token: stored[0]?.value });
    expect(await cli('admin-token', '--config', config)).toEqual(printed);
    expect(storedTokens()).toEqual(stored);
  });

  it('prints the configured token when the config sets one', async () => {
    const config = join(dir, 'with-token.yaml');
    writeFileSync(config, `admin_token: \${CLI_TEST_ADMIN}\ndatabase_url: sqlite:${join(dir, 'other', 'ledger.db')}\n`);
    expect(await cli('admin-token', '--config', config)).toEqual({ admin_token: ADMIN });
    expect(existsSync(join(dir, 'other', 'ledger.db'))).toBe(false);
  });
});
