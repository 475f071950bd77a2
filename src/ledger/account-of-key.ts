import { mapAwaitable, type Awaitable } from '../awaitable.js';
import { GatewayError } from '../errors.js';
import type { Account, Accounts, KeyRecord } from './ledger.js';

function found(account: Account | undefined): Account {
  if (!account) throw new GatewayError('unauthorized', 'this API key belongs to no account');
  return account;
}

/** The account a key belongs to (at once when cached: awaitable.ts); a key whose account is gone is no credential at all (401). */
export function accountOfKey(ledger: Accounts, key: KeyRecord): Awaitable<Account> {
  return mapAwaitable(ledger.getAccount(key.accountId), found);
}
