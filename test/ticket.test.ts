import { describe, expect, it } from 'vitest';
import { Ticket } from '../src/admission/ticket.js';
import { ManualClock } from '../src/clock.js';
import type { HoldStore, SettleRequest } from '../src/limits/hold-store.js';

/**
 * A request's ticket when its store or its ledger fails: the failure reaches the caller (or the
 * `onError` hook) and the ticket stops renewing, so a failed settlement never leaves a lease renewed
 * forever, and a charge the ledger could not record is reported rather than lost in silence.
 */
const LEASE = 30_000;

function storeThat(settle: (req: SettleRequest) => ReturnType<HoldStore['settle']>) {
  const renewals: string[] = [];
  const store: HoldStore = {
    admit: () => ({ ok: true, now: 0, balance: 0n }),
    settle,
    renew: (_account, id) => {
      renewals.push(id);
      return Promise.resolve();
    },
    record: () => Promise.resolve(),
    view: () => Promise.resolve(undefined),
    close: () => Promise.resolve(),
  };
  return { store, renewals };
}

function ticketOn(store: HoldStore, clock: ManualClock): Ticket {
  return new Ticket({
    holds: store,
    clock,
    accountId: 'acct',
    id: 'gen-1',
    keyHash: 'k1',
    leaseMs: LEASE,
    windowMs: 60_000,
    renewUntil: clock.now() + 10 * LEASE,
    held: 5n,
  });
}

const actual = (clock: ManualClock) => ({ cost: 3n, byokUsage: 0n, chargedAt: clock.now() });
/** Lets promise callbacks run (the ticket's reactions to `recorded` and to the store). */
const settleDown = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('a ticket whose settlement fails', () => {
  it('renews the pending charge until the ledger records it, then stops', async () => {
    const clock = new ManualClock();
    const { store, renewals } = storeThat(() => undefined);
    const ticket = ticketOn(store, clock);
    let recordedNow: () => void = () => undefined;
    const recorded = new Promise<void>((resolve) => (recordedNow = resolve));
    const errors: unknown[] = [];
    expect(ticket.settle(actual(clock), recorded, (e) => errors.push(e))).toBeUndefined();
    clock.advance(LEASE);
    expect(renewals.length).toBe(3); // every third of a lease while the charge is pending
    recordedNow();
    await settleDown();
    clock.advance(3 * LEASE);
    expect(renewals.length).toBe(3);
    expect(errors).toEqual([]);
  });

  it('reports a ledger that could not record the charge to onError, and stops renewing', async () => {
    const clock = new ManualClock();
    const { store, renewals } = storeThat(() => undefined);
    const ticket = ticketOn(store, clock);
    const failure = new Error('the ledger is down');
    const errors: unknown[] = [];
    ticket.settle(actual(clock), Promise.reject(failure), (e) => errors.push(e));
    await settleDown();
    expect(errors).toEqual([failure]);
    clock.advance(3 * LEASE);
    expect(renewals).toEqual([]);
  });

  it('throws a store that failed at once to the caller, and stops renewing', () => {
    const clock = new ManualClock();
    const failure = new Error('the store refused the settlement');
    const { store, renewals } = storeThat(() => {
      throw failure;
    });
    const ticket = ticketOn(store, clock);
    const errors: unknown[] = [];
    expect(() => ticket.settle(actual(clock), new Promise<void>(() => undefined), (e) => errors.push(e))).toThrow(failure);
    expect(ticket.settled).toBe(true); // never settled twice
    clock.advance(3 * LEASE);
    expect(renewals).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('rejects with a store that failed later, and stops renewing; a second settle does nothing', async () => {
    const clock = new ManualClock();
    const failure = new Error('Redis did not answer');
    let calls = 0;
    const { store, renewals } = storeThat(() => {
      calls += 1;
      return Promise.reject(failure);
    });
    const ticket = ticketOn(store, clock);
    await expect(ticket.settle(actual(clock), new Promise<void>(() => undefined), () => undefined)).rejects.toBe(failure);
    expect(ticket.settle(actual(clock), Promise.resolve(), () => undefined)).toBeUndefined();
    expect(calls).toBe(1);
    clock.advance(3 * LEASE);
    expect(renewals).toEqual([]);
  });
});
