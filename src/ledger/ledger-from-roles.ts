import type { Accounts, ByokSecrets, Charges, Generations, Keys, Ledger, LedgerHealth, Reports, Settings } from './ledger.js';

export interface LedgerRoles {
  accounts: Accounts;
  keys: Keys;
  byokSecrets: ByokSecrets;
  charges: Charges;
  generations: Generations;
  settings: Settings;
  health: LedgerHealth;
  reports: Reports;
}

/** One Ledger whose each role is served by the object given for it (a plain one, or a cache around it). */
export function ledgerFromRoles(r: LedgerRoles): Ledger {
  return {
    createAccount: (input) => r.accounts.createAccount(input),
    getAccount: (id) => r.accounts.getAccount(id),
    moneySnapshot: (accountId, key) => r.accounts.moneySnapshot(accountId, key),
    addCredits: (accountId, amount, kind, at) => r.accounts.addCredits(accountId, amount, kind, at),
    createKey: (key) => r.keys.createKey(key),
    findKey: (hash) => r.keys.findKey(hash),
    keyHashOfSecret: (secretHash) => r.keys.keyHashOfSecret(secretHash),
    listKeys: (accountId, listing) => r.keys.listKeys(accountId, listing),
    updateKey: (hash, patch, at) => r.keys.updateKey(hash, patch, at),
    rotateKey: (hash, rotation) => r.keys.rotateKey(hash, rotation),
    deleteKey: (hash, at) => r.keys.deleteKey(hash, at),
    keyUsage: (hash, at) => r.keys.keyUsage(hash, at),
    putByokSecret: (accountId, provider, ciphertext, at) => r.byokSecrets.putByokSecret(accountId, provider, ciphertext, at),
    deleteByokSecret: (accountId, provider) => r.byokSecrets.deleteByokSecret(accountId, provider),
    byokSecrets: (accountId) => r.byokSecrets.byokSecrets(accountId),
    charge: (charge) => r.charges.charge(charge),
    recorded: (id) => r.charges.recorded(id),
    awaitDurable: (written) => r.charges.awaitDurable(written),
    releaseAnswers: () => r.charges.releaseAnswers(),
    flush: () => r.charges.flush(),
    close: () => r.charges.close(),
    getGeneration: (id) => r.generations.getGeneration(id),
    getSetting: (name) => r.settings.getSetting(name),
    setSetting: (name, value) => r.settings.setSetting(name, value),
    settingOrCreate: (name, make) => r.settings.settingOrCreate(name, make),
    ping: () => r.health.ping(),
    listAccounts: (query) => r.reports.listAccounts(query),
    listGenerations: (query) => r.reports.listGenerations(query),
    spend: (query) => r.reports.spend(query),
  };
}
