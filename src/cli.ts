#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Command } from 'commander';
import { bootstrapDemo } from './bootstrap-demo.js';
import { ConfigError, loadConfig } from './config/load.js';
import { isGatewayError } from './errors.js';
import { readStoredSetting } from './ledger/stored-setting.js';
import { backupLedger } from './ledger/backup.js';
import { chargesInLog } from './ledger/charge-record.js';
import { csv, present } from './cli/present.js';
import { startGateway, type Gateway } from './main.js';
import { limitHeapGrowth } from './observability/heap-growth.js';
import { DecimalText } from './admin/parse-input.js';
import { settledWithin } from './settled-within.js';

/** A database URL without its password, for messages. */
const redactUrl = (url: string) => url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
const out = (line: string) => process.stdout.write(`${line}\n`);
const json = (value: unknown) => out(JSON.stringify(value, null, 2));

function fail(err: unknown): never {
  if (err instanceof ConfigError) process.stderr.write(`tollgate: ${err.message}\n`);
  else if (isGatewayError(err)) process.stderr.write(`tollgate: ${err.message}\n`);
  else process.stderr.write(`tollgate: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(isGatewayError(err) || err instanceof ConfigError ? 2 : 1);
}

/** Text printed as it is (CSV), not as a table. */
class CsvText {
  constructor(readonly text: string) {}
}

/** The fields that were given (a query from CLI options). */
const definedOnly = (o: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => e[1] !== undefined));

/** Options every admin verb takes. */
interface VerbOptions {
  config?: string;
  json?: boolean;
}

/**
 * Runs an admin verb against the ledger the config names, with the same code the admin API uses, and
 * prints its answer: for people (tables), or with --json as the admin API gives it.
 */
async function withGateway<T>(o: VerbOptions, fn: (gw: Gateway) => Promise<T>): Promise<void> {
  let gw: Gateway | undefined;
  try {
    const config = loadConfig(o.config);
    gw = await startGateway({ ...config, log_level: 'error' }, { listen: false });
    const answer = await fn(gw);
    if (answer instanceof CsvText) out(answer.text);
    else if (o.json) json(answer);
    else out(present(answer));
  } catch (err) {
    fail(err);
  } finally {
    await gw?.close();
  }
}

/** How many charges `ledger replay` looks for in the tables at once. */
const REPLAY_READS = 8;

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
const program = new Command('tollgate')
  .description('Self-hosted inference-routing gateway with OpenRouter-style usage limits')
  .version(version, '-V, --version', 'print the version');

program
  .command('serve')
  .description('serve the gateway (embedded defaults without --config)')
  .option('-c, --config <file>', 'YAML config file')
  .action(async (opts: { config?: string; json?: boolean }) => {
    limitHeapGrowth();
    let gw: Gateway;
    try {
      gw = await startGateway(loadConfig(opts.config));
    } catch (err) {
      fail(err);
    }
    out(`tollgate listening on ${gw.url}`);
    // The signals are handled from here on: a stop during the first start's demo account waits for it
    // (made and stored whole, so that the next start does not make another), then drains as always.
    let booted: Promise<void> = Promise.resolve();
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      out(`${signal}: finishing running requests and settling charges`);
      booted
        .catch(() => undefined)
        .then(() => gw.close())
        .then(
          () => process.exit(0),
          (err: unknown) => {
            process.stderr.write(`tollgate: shutdown failed: ${(err as Error).message}\n`);
            process.exit(1);
          },
        );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    if (!opts.config) {
      booted = bootstrapDemo(gw, out);
      await booted.catch((err: unknown) => {
        if (!stopping) fail(err);
      });
    } else if (gw.generatedAdminToken) out(`admin token (shown once): ${gw.adminToken}`);
  });

const configOpt = ['-c, --config <file>', 'YAML config file (default: embedded)'] as const;
const jsonOpt = ['--json', 'print the answer as JSON, as the admin API gives it (default: a table for people)'] as const;

const accounts = program.command('accounts').description('manage accounts');
accounts
  .command('create')
  .description('create an account')
  .requiredOption('--name <name>', 'account name')
  .option('--type <type>', 'prepaid | enterprise | subscription | invoice', 'prepaid')
  .option('--free-limits-exempt', 'exempt from free-model limits')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((o: { name: string; type: string; freeLimitsExempt?: boolean; config?: string; json?: boolean }) =>
    withGateway(o, (gw) => gw.admin.createAccount({ name: o.name, type: o.type, free_model_limits_exempt: o.freeLimitsExempt ?? false })),
  );
accounts
  .command('list')
  .description('list accounts, oldest first (--search matches names)')
  .option('--search <text>', 'only accounts whose name contains this (case-insensitive)')
  .option('--offset <n>', 'skip this many')
  .option('--limit <n>', 'at most this many (default 50, at most 200)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((o: { search?: string; offset?: string; limit?: string; config?: string; json?: boolean }) =>
    withGateway(o, async (gw) => {
      const page = await gw.reports.accounts(definedOnly({ search: o.search, offset: o.offset, limit: o.limit }));
      return o.json ? page : page.data;
    }),
  );
accounts
  .command('show <id>')
  .description('show an account: balance, purchases, usage and in-flight budget')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((id: string, o: { config?: string; json?: boolean }) => withGateway(o, (gw) => gw.admin.getAccount(id)));

const credits = program.command('credits').description('add credits');
credits
  .command('add <account> <amount>')
  .description('add credits to an account (a purchase, or an adjustment of either sign)')
  .option('--kind <kind>', 'purchase | adjustment', 'purchase')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((account: string, amount: string, o: { kind: string; config?: string; json?: boolean }) =>
    withGateway(o, (gw) => gw.admin.addCredits(account, { amount: new DecimalText(amount), kind: o.kind })),
  );

/** A CLI value that may clear a setting: `none` is null. */
const orNone = <T>(value: string, parse: (v: string) => T): T | null => (value === 'none' ? null : parse(value));

const keys = program.command('keys').description('manage API keys');
keys
  .command('create <account>')
  .description('create an API key for the account and print it (shown once); with --management, a management key')
  .option('--name <name>', 'key name')
  .option('--limit <credits>', 'spending cap in credits')
  .option('--limit-reset <period>', 'daily | weekly | monthly')
  .option('--expires-at <iso>', 'when the key stops working, e.g. 2027-01-31T00:00:00Z')
  .option('--management', "a management key: manages the account's keys through /api/v1/keys, refused for inference")
  .option(...configOpt)
  .option(...jsonOpt)
  .action(
    (account: string, o: { name?: string; limit?: string; limitReset?: string; expiresAt?: string; management?: boolean; config?: string; json?: boolean }) =>
      withGateway(o, (gw) =>
        gw.admin.createKey(account, {
          ...(o.name ? { name: o.name } : {}),
          ...(o.limit ? { limit: new DecimalText(o.limit) } : {}),
          ...(o.limitReset ? { limit_reset: o.limitReset } : {}),
          ...(o.expiresAt ? { expires_at: o.expiresAt } : {}),
          ...(o.management ? { management: true } : {}),
        }),
      ),
  );
keys
  .command('list <account>')
  .description("list the account's keys (deleted ones left out)")
  .option(...configOpt)
  .option(...jsonOpt)
  .action((account: string, o: { config?: string; json?: boolean }) => withGateway(o, (gw) => gw.admin.listKeys(account)));
keys
  .command('update <hash>')
  .description("change a key's name, limit, limit reset or expiry (none clears a limit, reset or expiry)")
  .option('--name <name>', 'key name')
  .option('--limit <credits>', 'spending cap in credits, or none')
  .option('--limit-reset <period>', 'daily | weekly | monthly, or none')
  .option('--expires-at <iso>', 'when the key stops working (e.g. 2027-01-31T00:00:00Z), or none')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((hash: string, o: { name?: string; limit?: string; limitReset?: string; expiresAt?: string; config?: string; json?: boolean }) => {
    const patch = {
      ...(o.name !== undefined ? { name: o.name } : {}),
      ...(o.limit !== undefined ? { limit: orNone(o.limit, (v) => new DecimalText(v)) } : {}),
      ...(o.limitReset !== undefined ? { limit_reset: orNone(o.limitReset, String) } : {}),
      ...(o.expiresAt !== undefined ? { expires_at: orNone(o.expiresAt, String) } : {}),
    };
    if (Object.keys(patch).length === 0) fail(new Error('keys update: nothing to change; give --name, --limit, --limit-reset or --expires-at'));
    return withGateway(o, (gw) => gw.admin.patchKey(hash, patch));
  });
keys
  .command('rotate <hash>')
  .description('give the key a new secret and print it (shown once): same hash, usage and limits; the old secret stops after --grace seconds')
  .option('--grace <seconds>', 'how long the old secret keeps working (default 0: it stops at once; at most 30 days)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((hash: string, o: { grace?: string; config?: string; json?: boolean }) =>
    withGateway(o, (gw) => gw.admin.rotateKey(hash, o.grace === undefined ? {} : { grace_seconds: Number(o.grace) })),
  );
for (const [verb, disabled] of [
  ['disable', true],
  ['enable', false],
] as const) {
  keys
    .command(`${verb} <hash>`)
    .description(disabled ? 'disable a key (requests with it get 401 until it is enabled)' : 'enable a disabled key')
    .option(...configOpt)
    .option(...jsonOpt)
    .action((hash: string, o: { config?: string; json?: boolean }) => withGateway(o, (gw) => gw.admin.patchKey(hash, { disabled })));
}
keys
  .command('delete <hash>')
  .description('delete a key: it stops working and leaves lists; its usage and generations stay')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((hash: string, o: { config?: string; json?: boolean }) => withGateway(o, (gw) => gw.admin.deleteKey(hash)));

const byok = program.command('byok').description("accounts' own provider keys (BYOK), stored encrypted");
byok
  .command('set <account> <provider>')
  .description("store the account's own key for a provider (read from --key-file or standard input, never from the command line)")
  .option('--key-file <file>', 'a file holding the provider key (default: standard input)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((account: string, provider: string, o: { keyFile?: string; config?: string; json?: boolean }) =>
    withGateway(o, async (gw) => {
      const apiKey = readFileSync(o.keyFile ?? 0, 'utf8').trim();
      await gw.admin.putByok(account, provider, { api_key: apiKey });
      return { account, provider, stored: true };
    }),
  );
byok
  .command('delete <account> <provider>')
  .description("remove the account's own key for a provider (its requests go back to the platform's key)")
  .option(...configOpt)
  .option(...jsonOpt)
  .action((account: string, provider: string, o: { config?: string; json?: boolean }) =>
    withGateway(o, async (gw) => {
      await gw.admin.deleteByok(account, provider);
      return { account, provider, deleted: true };
    }),
  );

program
  .command('generations <account>')
  .description("an account's generations, newest first (model, provider, tokens, cost, status)")
  .option('--key <hash>', 'only this key')
  .option('--model <id>', 'only this model')
  .option('--status <status>', 'completed | cancelled | error')
  .option('--from <time>', 'from this time (ISO 8601 date or date-time)')
  .option('--to <time>', 'before this time')
  .option('--offset <n>', 'skip this many')
  .option('--limit <n>', 'at most this many (default 50, at most 500)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((account: string, o: Record<string, string | undefined> & { config?: string; json?: boolean }) =>
    withGateway(o, async (gw) => {
      const { config: _c, json: _j, ...query } = o;
      const page = await gw.reports.generations(account, definedOnly(query));
      return o.json ? page : page.data;
    }),
  );

program
  .command('report')
  .description('spend, requests and tokens per day (or hour) and per key, model, provider or account, from the rollups')
  .option('--from <time>', 'from this time (ISO 8601; default 30 days ago)')
  .option('--to <time>', 'up to this time (default now)')
  .option('--bucket <bucket>', 'day | hour', 'day')
  .option('--by <dimensions>', 'comma-separated: account, key, model, provider', 'model')
  .option('--account <id>', 'only this account')
  .option('--key <hash>', 'only this key')
  .option('--csv', 'print CSV (for a spreadsheet)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((o: { from?: string; to?: string; bucket: string; by: string; account?: string; key?: string; csv?: boolean; config?: string; json?: boolean }) =>
    withGateway(o.csv ? { ...o, json: false } : o, async (gw) => {
      const report = await gw.reports.spend(definedOnly({ from: o.from, to: o.to, bucket: o.bucket, by: o.by, account: o.account, key: o.key }));
      if (o.csv) return new CsvText(csv(report.data));
      return o.json ? report : report.data;
    }),
  );

program
  .command('backup <file>')
  .description("copy the SQLite ledger to a new file while the gateway runs (SQLite's online backup; for PostgreSQL use pg_dump)")
  .option(...configOpt)
  .option(...jsonOpt)
  .action(async (file: string, o: { config?: string; json?: boolean }) => {
    try {
      const result = await backupLedger(loadConfig(o.config).database_url, file);
      if (o.json) json(result);
      else
        out(
          `backed up the ledger to ${result.file} (${result.pages} pages${result.journalFiles > 0 ? `, and ${result.journalFiles} charge journal files to ${result.file}-charges` : ''})`,
        );
    } catch (err) {
      fail(err);
    }
  });

program
  .command('ledger')
  .description('ledger maintenance')
  .command('replay <logfile>')
  .description('write the charges a shutdown logged as "unwritten charge" lines (each at most once)')
  .option(...configOpt)
  .option(...jsonOpt)
  .action((logfile: string, o: { config?: string; json?: boolean }) =>
    withGateway(o, async (gw) => {
      const charges = chargesInLog(readFileSync(logfile, 'utf8'));
      // A generation already in the ledger is not charged again, so a replay can be repeated safely.
      for (const c of charges) void gw.ledger.charge(c);
      await gw.ledger.flush();
      // A charge the database refused is queued again for its next try, and set aside after its last: each
      // is waited for (up to the shutdown deadline), then looked for in the tables, a few at a time (each
      // read holds a connection of the pool).
      const ms = gw.config.ledger.shutdown_deadline_ms;
      const settled = await Promise.all(charges.map((c) => settledWithin(gw.ledger.recorded(c.id), ms)));
      const missing: string[] = [];
      for (let i = 0; i < charges.length; i += REPLAY_READS) {
        const part = charges.slice(i, i + REPLAY_READS);
        const found = await Promise.all(part.map((c, j) => (settled[i + j] ? gw.ledger.getGeneration(c.id) : undefined)));
        for (const [j, c] of part.entries()) if (found[j] === undefined) missing.push(c.id);
      }
      if (missing.length > 0)
        throw new Error(
          `${missing.length} of ${charges.length} charges could not be written (${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}): ` +
            'the database refused them or did not answer within ledger.shutdown_deadline_ms; the log still holds them, ' +
            'and replaying it again never charges one twice',
        );
      return { charges: charges.length };
    }),
  );

program
  .command('admin-token')
  .description('print the admin token: the configured one, or the one stored on first start (never creates one)')
  .option(...configOpt)
  .action(async (o: { config?: string; json?: boolean }) => {
    try {
      const config = loadConfig(o.config);
      const token = config.admin_token ?? (await readStoredSetting(config.database_url, 'admin_token'));
      if (!token) {
        process.stderr.write(
          `tollgate: no admin token: admin_token is not set in the config, and the ledger (${redactUrl(config.database_url)}) holds none yet. Set admin_token, or start \`tollgate serve\` once: it generates one, stores it and prints it.\n`,
        );
        process.exit(1);
      }
      json({ admin_token: token });
    } catch (err) {
      fail(err);
    }
  });

program.parseAsync(process.argv).catch(fail);
