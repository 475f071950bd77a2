import type { Redis } from 'ioredis';
import type { Counter, CounterStore, HitResult } from './counter-store.js';
import { withinDeadline } from './limits-unavailable.js';

/**
 * Slack added to a counter's lifetime in Redis, so that a process whose clock runs a little behind
 * Redis's never finds its window's counter already gone (which would let it count from zero again).
 */
const EXPIRY_SLACK_MS = 5_000;

/**
 * Checks every counter against its limit and, only when all are below, adds one to each: one atomic
 * step, so two processes can never both take the last slot. KEYS: the counters; ARGV: their limits,
 * then their lifetimes in ms. Answers {1, counts…} or {0, index of the first full counter, its count}.
 */
const HIT = `
local n = #KEYS
for i = 1, n do
  local c = tonumber(redis.call('GET', KEYS[i]) or '0')
  if c >= tonumber(ARGV[i]) then return {0, i - 1, c} end
end
local out = {1}
for i = 1, n do
  local c = redis.call('INCR', KEYS[i])
  if c == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[n + i]) end
  out[#out + 1] = c
end
return out
`;

/** Adds to every counter, whatever its limit. KEYS: the counters; ARGV: the amounts, then their lifetimes in ms. Answers the counts. */
const ADD = `
local n = #KEYS
local out = {}
for i = 1, n do
  local c = redis.call('INCRBY', KEYS[i], ARGV[i])
  if c == tonumber(ARGV[i]) then redis.call('PEXPIRE', KEYS[i], ARGV[n + i]) end
  out[i] = c
end
return out
`;

interface WithHit extends Redis {
  tollgateCounterHit(...args: Array<string | number>): Promise<number[]>;
  tollgateCounterAdd(...args: Array<string | number>): Promise<number[]>;
}

export interface RedisCounterStoreOptions {
  /** Prepended to every key, so that several gateways (or tests) can share one Redis. */
  prefix?: string;
  /** How long a check waits for Redis before it fails closed (503 limits_unavailable). */
  timeoutMs?: number;
}

/**
 * Counters in Redis: every gateway process on one Redis shares one set of rate limits (the spec:
 * "capacity is governed globally"). The client comes in from main.ts, built and configured there.
 * Counts are small integers, so nothing here passes money through a Lua number.
 */
export class RedisCounterStore implements CounterStore {
  private readonly redis: WithHit;
  private readonly prefix: string;
  private readonly timeoutMs: number;

  constructor(redis: Redis, options: RedisCounterStoreOptions = {}) {
    this.prefix = options.prefix ?? 'tollgate:';
    this.timeoutMs = options.timeoutMs ?? 2000;
    if (!('tollgateCounterHit' in redis)) redis.defineCommand('tollgateCounterHit', { lua: HIT });
    if (!('tollgateCounterAdd' in redis)) redis.defineCommand('tollgateCounterAdd', { lua: ADD });
    this.redis = redis as WithHit;
  }

  async hit(counters: readonly Counter[], now: number): Promise<HitResult> {
    if (counters.length === 0) return { ok: true, counts: [] };
    const keys = counters.map((c) => this.prefix + c.key);
    const limits = counters.map((c) => c.limit);
    const lifetimes = counters.map((c) => Math.max(1, c.resetAt - now) + EXPIRY_SLACK_MS);
    const r = await withinDeadline(this.timeoutMs, () => this.redis.tollgateCounterHit(keys.length, ...keys, ...limits, ...lifetimes));
    if (r[0] === 1) return { ok: true, counts: r.slice(1).map(Number) };
    return { ok: false, failed: Number(r[1]), count: Number(r[2]) };
  }

  async add(counters: ReadonlyArray<{ key: string; n: number; resetAt: number }>, now: number): Promise<number[]> {
    if (counters.length === 0) return [];
    const keys = counters.map((c) => this.prefix + c.key);
    const amounts = counters.map((c) => c.n);
    const lifetimes = counters.map((c) => Math.max(1, c.resetAt - now) + EXPIRY_SLACK_MS);
    const r = await withinDeadline(this.timeoutMs, () => this.redis.tollgateCounterAdd(keys.length, ...keys, ...amounts, ...lifetimes));
    return r.map(Number);
  }

  async peek(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const values = await withinDeadline(this.timeoutMs, () => this.redis.mget(...keys.map((k) => this.prefix + k)));
    return values.map((v) => (v === null ? 0 : Number(v)));
  }

  /** The client belongs to main.ts, which closes it. */
  async close(): Promise<void> {}
}
