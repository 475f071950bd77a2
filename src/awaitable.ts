/**
 * A value now, or a promise of it: what a read answers when it may have the value at hand (a cache
 * hit) or may have to fetch it. A hit then costs no promise and no turn of the microtask queue: the
 * chat route reads a key, its account and the account's BYOK keys from caches on every request, and
 * each promise on that path cost as much as the lookup behind it.
 *
 * A function that answers an Awaitable may also throw at once instead of rejecting: call it inside an
 * async function (where `await` turns both into a rejection), or catch both, as `mapAwaitable` does.
 */
export type Awaitable<T> = T | Promise<T>;

/** Native promises only: every Awaitable here is a value or a native promise (an async function's, or `new Promise`). */
export function isPromise<T>(value: Awaitable<T>): value is Promise<T> {
  return value instanceof Promise;
}

/** `f` of the value: at once when it is at hand, once it settles when it is a promise. */
export function mapAwaitable<T, U>(value: Awaitable<T>, f: (value: T) => Awaitable<U>): Awaitable<U> {
  return isPromise(value) ? value.then(f) : f(value);
}
