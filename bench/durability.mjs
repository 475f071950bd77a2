// What waiting for a charge to be durable adds to each answer (issue 7 item 9, CONTRACT §8).
//
// An answer (the JSON body, or a stream's usage chunk and [DONE]) goes out once its charge is
// durable: the time from `charge()` to durable is exactly what the wait adds to that answer, the
// same for JSON and SSE (one code path: Settlement.settle → Ledger.awaitDurable). This drives the
// built ledger (dist/) the way the gateway does: C concurrent clients in a closed loop, each
// charging a generation and waiting for it before its next one, and reports p50/p99 of the wait and
// the charges per second, on SQLite (a file, WAL, synchronous=NORMAL) and, when DATABASE_URL is set,
// on PostgreSQL (a database of its own, dropped afterwards).
//
//   npm run build && node bench/durability.mjs [--clients 16,100] [--seconds 5]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../dist/ledger/database.js';
import { KyselyLedger } from '../dist/ledger/kysely-ledger.js';
import { migrateToLatest } from '../dist/ledger/migrations.js';
import { benchCharge } from './lib/charges.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const clientCounts = arg('clients', '16,100').split(',').map(Number);
const seconds = Number(arg('seconds', '5'));

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function targets() {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-durability-'));
  const list = [{ name: 'sqlite', url: `sqlite:${join(dir, 'ledger.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }];
  if (process.env.DATABASE_URL) {
    const name = `tollgate_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = `/${name}`;
    list.push({
      name: 'postgres',
      url: url.toString(),
      drop: async () => {
        const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    });
  }
  return list;
}

async function run(target, clients) {
  const db = openDatabase(target.url);
  await migrateToLatest(db);
  const ledger = new KyselyLedger(db);
  const accounts = [];
  for (let i = 0; i < 20; i++)
    accounts.push(await ledger.createAccount({ name: `b${i}`, type: 'prepaid', createdAt: Date.now(), freeModelLimitsExempt: false }));
  const waits = [];
  let seq = 0;
  const end = Date.now() + seconds * 1000;
  const client = async (n) => {
    while (Date.now() < end) {
      const a = accounts[(n + seq) % accounts.length];
      seq += 1;
      const t0 = process.hrtime.bigint();
      const written = ledger.charge(
        benchCharge({
          id: `gen-bench-${n}-${seq}-${randomBytes(4).toString('hex')}`,
          accountId: a.id,
          keyHash: `key-${a.id}`,
          createdAt: Date.now(),
          streamed: n % 2 === 0,
        }),
      );
      const durable = await ledger.awaitDurable(written);
      if (!durable) throw new Error('a charge was not durable within ledger.durable_wait_ms');
      waits.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
  const elapsed = (Date.now() - started) / 1000;
  await ledger.close();
  waits.sort((x, y) => x - y);
  return { charges: waits.length, perSecond: Math.round(waits.length / elapsed), p50: pct(waits, 50), p99: pct(waits, 99) };
}

console.log('ledger    clients  charges/s  wait p50 ms  wait p99 ms');
for (const target of await targets()) {
  try {
    for (const clients of clientCounts) {
      const r = await run(target, clients);
      console.log(
        `${target.name.padEnd(9)} ${String(clients).padStart(7)}  ${String(r.perSecond).padStart(9)}  ${r.p50.toFixed(2).padStart(11)}  ${r.p99.toFixed(2).padStart(11)}`,
      );
    }
  } finally {
    await target.drop();
  }
}
