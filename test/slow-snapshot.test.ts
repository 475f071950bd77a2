import { describe, expect, it } from 'vitest';
import { AccountMoney } from '../src/admission/account-money.js';
import { ManualClock } from '../src/clock.js';
import type { LedgerUpdate } from '../src/ledger/ledger.js';
import { MemoryHoldStore } from '../src/limits/memory-hold-store.js';

/**
 * Single node (no Redis): main.ts gives the memory hold store snapshotTtlMs = 1000. The ledger's reads
 * may take up to readDeadlineMs (5 s) and are served; a snapshot is stamped when its read is back, so
 * one that took 1 s or more still stands for the admission that asked for it (stamped when the read
 * started, it arrived stale, was read again LOAD_TRIES times, and the request got a 503).
 */
describe('memory hold store: a snapshot read that takes as long as snapshotTtlMs', () => {
  it('still admits the request that loaded it', async () => {
    const clock = new ManualClock(1_000_000);
    const holds = new MemoryHoldStore(clock, { snapshotTtlMs: 1000 });
    let reads = 0;
    const ledger = {
      async moneySnapshot(accountId: string): Promise<LedgerUpdate | undefined> {
        reads += 1;
        clock.advance(1000); // the database took 1 s to answer (a busy SQLite applying its journal backlog, a loaded PostgreSQL)
        return { accountId, account: { seq: 1n, balance: 10_000_000_000n, totalUsage: 0n } };
      },
    };
    const money = new AccountMoney(holds, ledger, clock);
    const result = await Promise.resolve(money.admit({ accountId: 'acct', id: 'gen-1', leaseMs: 30_000, refuseNegative: true, balance: 1_000_000_000n })).catch(
      (e: unknown) => e,
    );
    expect(result).toMatchObject({ ok: true });
    expect(reads).toBe(1);
  });
});
