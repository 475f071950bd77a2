import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AccountMoney } from '../src/admission/account-money.js';
import { Admission } from '../src/admission/admission.js';
import { inFlightBudget, inFlightRules } from '../src/admission/applicability.js';
import type { Ticket } from '../src/admission/ticket.js';
import { noMetrics } from '../src/observability/metrics.js';
import { Settlement } from '../src/chat/settlement.js';
import { ManualClock } from '../src/clock.js';
import { parseConfig } from '../src/config/load.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { migrateToLatest } from '../src/ledger/migrations.js';
import { creditsFromJson } from '../src/ledger/money.js';
import type { HoldStore } from '../src/limits/hold-store.js';
import { MemoryHoldStore } from '../src/limits/memory-hold-store.js';
import { RedisHoldStore } from '../src/limits/redis-hold-store.js';
import { Catalog } from '../src/routing/catalog.js';
import { planAttempts } from '../src/routing/plan.js';
import { GatewayError } from '../src/errors.js';
import { redisTarget, redisUrl } from './helpers/redis.js';

const WINDOW = 60_000;
const config = parseConfig({
  limits: { in_flight: { fraction: 0.5, ceiling: 20, balance_threshold: 100, settlement_window_ms: WINDOW } },
  providers: [{ id: 'demo', type: 'demo' }],
  models: [{ id: 't/m', context_length: 100_000, endpoints: [{ provider: 'demo', model: 'm', pricing: { prompt: '0', completion: '0.01' } }] }],
});
const catalog = new Catalog(config);
const attempts = planAttempts([catalog.get('t/m')!], undefined);
const pricing = attempts[0]!.endpoint.pricing;

type Op =
  | { kind: 'start'; maxTokens: number }
  | { kind: 'burst'; starts: number[]; ends: number[] }
  | { kind: 'complete'; pick: number; used: number }
  | { kind: 'fail'; pick: number }
  | { kind: 'disconnect'; pick: number; used: number }
  | { kind: 'topUp'; credits: number }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), maxTokens: fc.integer({ min: 1, max: 1500 }) }),
  fc.record({
    kind: fc.constant('burst' as const),
    starts: fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 1, maxLength: 8 }),
    ends: fc.array(fc.nat(), { maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant('complete' as const), pick: fc.nat(), used: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('fail' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('disconnect' as const), pick: fc.nat(), used: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('topUp' as const), credits: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 90_000 }) }),
);

/**
 * The ledger as a networked database behaves: every read yields to other work a few times before and
 * after it answers, so that concurrent admissions and settlements interleave.
 */
function slowReads(ledger: KyselyLedger, delays: () => number): KyselyLedger {
  const yieldTurns = async () => {
    for (let i = delays(); i > 0; i--) await new Promise((resolve) => setImmediate(resolve));
  };
  return new Proxy(ledger, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (prop !== 'getAccount' && prop !== 'keyUsage' && prop !== 'moneySnapshot') return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        await yieldTurns();
        const r = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await yieldTurns();
        return r;
      };
    },
  });
}

// The same property over every hold store: in process, and Redis (its Lua scripts) when REDIS_URL is set.
const stores: Array<[string, number, (clock: ManualClock) => Promise<{ holds: HoldStore; close(): Promise<void> }>]> = [
  ['memory', 400, async (clock) => ({ holds: new MemoryHoldStore(clock), close: async () => undefined })],
];
if (redisUrl) {
  stores.push([
    'redis',
    200,
    async (clock) => {
      const t = await redisTarget();
      const holds = new RedisHoldStore(t.client, { prefix: t.prefix, clock, syncEveryMs: 0 });
      return { holds, close: async () => (await holds.close(), await t.close()) };
    },
  ]);
}

describe.each(stores)('in-flight holds under random interleavings (property), %s store', (_name, numRuns, makeStore) => {
  it('never exceed the budget, settle once each, and leave the balance equal to credits minus charges', async () => {
    const rules = inFlightRules(config);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 100, max: 130 })),
        fc.array(op, { minLength: 1, maxLength: 30 }),
        fc.infiniteStream(fc.nat(4)),
        async (initial, ops, turns) => {
          const db = openDatabase('sqlite::memory:');
          await migrateToLatest(db);
          const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
          const store = await makeStore(clock);
          const holds = store.holds;
          const ledger = slowReads(new KyselyLedger(db, { onCommitted: (u) => u.forEach((x) => void holds.record(x)) }), () => turns.next().value as number);
          const money = new AccountMoney(holds, ledger, clock);
          const admission = new Admission({ holds, money, clock, config });
          const account = await ledger.createAccount({ name: 'p', type: 'prepaid', createdAt: clock.now(), freeModelLimitsExempt: false });
          const key = await ledger.createKey({
            hash: 'k',
            accountId: account.id,
            name: 'k',
            label: 'l',
            limit: null,
            limitReset: null,
            includeByokInLimit: false,
            expiresAt: null,
            createdAt: clock.now(),
          });
          let credited = creditsFromJson(initial);
          await ledger.addCredits(account.id, credited, 'purchase', clock.now());
          let charged = 0n;
          let settledCount = 0;
          let seq = 0;
          const running: Array<{ settlement: Settlement; ticket: Ticket; maxTokens: number }> = [];
          const take = (pick: number) => (running.length ? running.splice(pick % running.length, 1)[0] : undefined);
          const end = (r: { settlement: Settlement; maxTokens: number }, used: number, cancelled: boolean) => {
            const completionTokens = Math.floor(r.maxTokens * used);
            const usage = { promptTokens: 3, completionTokens };
            const input = { usage, usageSource: 'upstream' as const, pricing, extras: 0n, finishReason: 'stop', cancelled, endedAt: clock.now() };
            const first = r.settlement.settle(input);
            const again = r.settlement.settle(input); // a second ending of the same request changes nothing
            expect(again).toBe(first);
            charged += first.cost;
            settledCount += 1;
          };

          /** As the chat pipeline does: read the account, then ask for admission. */
          const start = async (maxTokens: number, alone: boolean) => {
            const account0 = (await ledger.getAccount(account.id))!;
            const before = await money.view(account.id);
            const id = `gen-p-${++seq}`;
            try {
              const ticket = await admission.admit({
                id,
                key,
                account: account0,
                attempts,
                messages: [{ role: 'user', content: 'x' }],
                sideText: '',
                addedPromptTokens: 0,
                choices: 1,
                maxTokens,
                byokProviders: new Set(),
                byokFeeFraction: 0.05,
                pluginCharges: 0n,
                kind: { free: false, paidPlugin: false },
              });
              if (alone) {
                const after = await money.view(account.id);
                if (before.balance < rules.balanceThreshold) expect(after.budgetHeld).toBeLessThanOrEqual(inFlightBudget(rules, before.balance));
                expect(after.runningHeld).toBeLessThanOrEqual(before.balance);
              }
              const settlement = new Settlement(
                ledger,
                { id, accountId: account.id, keyHash: key.hash, model: 't/m', provider: 'demo', isByok: false, streamed: true, startedAt: clock.now() },
                0.05,
                ticket,
                {
                  onError: (err) => {
                    throw err;
                  },
                  metrics: noMetrics,
                  now: () => clock.now(),
                },
              );
              running.push({ settlement, ticket, maxTokens });
              return true;
            } catch (err) {
              expect(err).toBeInstanceOf(GatewayError);
              expect((err as GatewayError).status).toBe(402);
              return false;
            }
          };

          for (const o of ops) {
            if (o.kind === 'start') {
              await start(o.maxTokens, true);
            } else if (o.kind === 'burst') {
              // Admissions and completions at once: the holds must still fit what the account has.
              const before = await money.view(account.id);
              const admitted = await Promise.all([
                ...o.starts.map((t) => start(t, false)),
                ...o.ends.map(async (pick) => {
                  for (let i = turns.next().value as number; i > 0; i--) await new Promise((resolve) => setImmediate(resolve));
                  const r = take(pick);
                  if (r) end(r, 1, false);
                  return false;
                }),
              ]);
              for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
              const after = await money.view(account.id);
              // Every running estimate is covered by the balance (as every process sees it).
              expect(after.runningHeld).toBeLessThanOrEqual(after.balance);
              // Each admission was checked against the holds and the budget of its moment; the balance only
              // fell during the burst, and settling only lowers a hold, so the last admission bounds what is held.
              if (admitted.some(Boolean) && before.balance < rules.balanceThreshold) {
                expect(after.budgetHeld).toBeLessThanOrEqual(inFlightBudget(rules, before.balance));
              }
            } else if (o.kind === 'complete') {
              const r = take(o.pick);
              if (r) end(r, o.used, false);
            } else if (o.kind === 'disconnect') {
              const r = take(o.pick);
              if (r) end(r, o.used, true);
            } else if (o.kind === 'fail') {
              const r = take(o.pick);
              if (r) r.settlement.settleNothing();
            } else if (o.kind === 'topUp') {
              const amount = creditsFromJson(o.credits);
              credited += amount;
              await ledger.addCredits(account.id, amount, 'purchase', clock.now());
            } else {
              clock.advance(o.ms);
            }
            const seen = await money.view(account.id);
            expect(seen.balance).toBe(credited - charged); // exact, to the last nanocredit, before and after the commits
            expect(seen.balance).toBeGreaterThanOrEqual(0n); // running holds never let the balance be overdrawn
          }

          // Whatever was left running ends; once the window passes nothing is held anywhere.
          for (const r of running.splice(0)) r.settlement.settleNothing();
          await ledger.flush();
          await new Promise((resolve) => setImmediate(resolve));
          clock.advance(WINDOW);
          expect(await money.view(account.id)).toMatchObject({ budgetHeld: 0n, runningHeld: 0n, balance: credited - charged });
          expect((await ledger.getAccount(account.id))?.balance).toBe(credited - charged);
          const generations = await db.selectFrom('generations').select(db.fn.countAll().as('n')).executeTakeFirst();
          expect(Number(generations?.n)).toBe(settledCount);
          await ledger.close();
          await store.close();
        },
      ),
      { numRuns },
    );
  });
});
