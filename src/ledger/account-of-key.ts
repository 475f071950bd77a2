import { GatewayError } from '../errors.js';
import type { Account, Accounts, KeyRecord } from './ledger.js';

/** The account a key belongs to; a key whose account is gone is no credential at all (401). */
export async function accountOfKey(ledger: Accounts, key: KeyRecord): Promise<Account> {
  const account = await ledger.getAccount(key.accountId);
  if (!account) throw new GatewayError('unauthorized', 'this API key belongs to no account');
  return account;
}
