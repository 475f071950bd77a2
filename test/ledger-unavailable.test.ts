import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../src/errors.js';
import { toHttpError } from '../src/http/error-handler.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { isLedgerUnavailable, LedgerTimeout, ledgerUnavailable } from '../src/ledger/ledger-unavailable.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('issue 8: which database failures are "the ledger does not answer" (CONTRACT §8)', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['connection reset', withCode('ECONNRESET')],
    ['connect timeout (socket)', withCode('ETIMEDOUT')],
    ['server stopping (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['server crashed (57P02)', withCode('57P02')],
    ['server starting (57P03)', withCode('57P03', 'the database system is starting up')],
    ['connection exception class 08', withCode('08006')],
    ['statement timeout (57014)', withCode('57014', 'canceling statement due to statement timeout')],
    ['too many connections (53300)', withCode('53300')],
    ['node-postgres: terminated', new Error('Connection terminated unexpectedly')],
    ['pg-pool: no connection in time', new Error('timeout exceeded when trying to connect')],
    ['pg: connection timeout, wrapping its cause', new Error('Connection terminated due to connection timeout', { cause: new Error('x') })],
    ['a wrapped refusal', new Error('database failed', { cause: withCode('ECONNREFUSED') })],
    ['every address refused (AggregateError)', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], '')],
    ['the ledger gave up waiting', new LedgerTimeout(3000)],
    ['SQLite locked past its busy timeout', withCode('SQLITE_BUSY', 'database is locked')],
  ])('%s: unavailable', (_name, err) => {
    expect(isLedgerUnavailable(err)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505', 'duplicate key value violates unique constraint')],
    ['a number out of range', withCode('22003', 'bigint out of range')],
    ['a missing table', withCode('42P01', 'relation "generations" does not exist')],
    ['an SQLite constraint', withCode('SQLITE_CONSTRAINT_PRIMARYKEY')],
    ['a plain error', new Error('something else')],
    ['a gateway error', new GatewayError('unauthorized', 'invalid API key')],
    ['not an error', 'ECONNREFUSED'],
  ])('%s: stays what it is', (_name, err) => {
    expect(isLedgerUnavailable(err)).toBe(false);
  });

  it('is answered 503 with Retry-After and reason ledger_unavailable, without the driver error', () => {
    const http = toHttpError(ledgerUnavailable(withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.7:5432')));
    expect(http.status).toBe(503);
    expect(http.headers['retry-after']).toMatch(/^\d+$/);
    expect(http.body.error.metadata).toEqual({ reason: 'ledger_unavailable' });
    expect(JSON.stringify(http.body)).not.toMatch(/10\.0\.0\.7|ECONNREFUSED/);
  });
});

describe('issue 8: a PostgreSQL server that accepts connections and never answers', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  let url: string;

  beforeAll(async () => {
    // Takes the TCP connection and says nothing: a server stalled, or a network that drops replies.
    server = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `postgres://postgres@127.0.0.1:${(server.address() as AddressInfo).port}/tollgate`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers reads ledger_unavailable at their deadline instead of waiting, and admin writes once the connection gives up', async () => {
    const ledger = new KyselyLedger(openDatabase(url), { readDeadlineMs: 100 });
    const unavailable = { code: 'unavailable', metadata: { reason: 'ledger_unavailable' } };
    try {
      await expect(ledger.findKey('h')).rejects.toMatchObject(unavailable);
      await expect(ledger.getAccount('acct')).rejects.toMatchObject(unavailable);
      await expect(ledger.keyUsage('h', Date.now())).rejects.toMatchObject(unavailable);
      await expect(ledger.byokSecrets('acct')).rejects.toMatchObject(unavailable);
      await expect(ledger.getGeneration('gen')).rejects.toMatchObject(unavailable);
      // A write has no deadline of its own (it could still land): the connection timeout ends it.
      await expect(ledger.createAccount({ name: 'a', type: 'prepaid', createdAt: 0, freeModelLimitsExempt: false })).rejects.toMatchObject(unavailable);
    } finally {
      await ledger.close();
    }
  }, 30_000);
});
