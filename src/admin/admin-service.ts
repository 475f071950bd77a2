import type { AccountMoney } from '../admission/account-money.js';
import type { Admission } from '../admission/admission.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { GatewayError, invalidRequest, notFound } from '../errors.js';
import { type Account, type KeyRecord, type Accounts, type Keys } from '../ledger/ledger.js';
import { creditsFromJson, creditsToJson } from '../ledger/money.js';
import type { ByokVault } from '../security/byok-vault.js';
import type { KeyService } from './key-service.js';
import { amountOf, parseInput as parse } from './parse-input.js';
import { byokSchema, creditsSchema, newAccountSchema } from './request-schemas.js';
import type { AccountJson, DeletedJson, IssuedKeyInfoJson, KeyInfoJson } from './answer-schemas.js';
import { accountView, keyInfoView } from './views.js';

/** The most a balance or purchase total may reach: 9e9 credits keeps every amount inside a signed 64-bit column. */
const MAX_TOTAL = creditsFromJson(9_000_000_000);

/** Admin work, shared by the admin API and the CLI verbs. */
export class AdminService {
  constructor(
    private readonly ledger: Accounts & Pick<Keys, 'listKeys'>,
    private readonly keys: KeyService,
    private readonly vault: ByokVault,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly admission: Admission,
    private readonly money: AccountMoney,
  ) {}

  private async account(id: string): Promise<Account> {
    const account = await this.ledger.getAccount(id);
    if (!account) throw notFound(`no account with id "${id}"`);
    return account;
  }

  private async keyInfo(key: KeyRecord): Promise<KeyInfoJson> {
    return keyInfoView(key, (await this.money.keyView(key.accountId, key.hash)).key);
  }

  async createAccount(body: unknown): Promise<AccountJson> {
    const input = parse(newAccountSchema, body);
    const account = await this.ledger.createAccount({
      name: input.name,
      type: input.type as Account['type'],
      createdAt: input.created_at ? Date.parse(input.created_at) : this.clock.now(),
      freeModelLimitsExempt: input.free_model_limits_exempt,
    });
    return this.view(account);
  }

  async getAccount(id: string): Promise<AccountJson> {
    return this.view(await this.account(id));
  }

  /** An account, with where it stands against its in-flight spending budget. */
  private async view(account: Account): Promise<AccountJson> {
    const [status, current] = await Promise.all([this.admission.status(account), this.money.account(account)]);
    return {
      ...accountView(current),
      in_flight: { subject: status.subject, budget: creditsToJson(status.budget), held: creditsToJson(status.held) },
    };
  }

  async addCredits(id: string, body: unknown): Promise<AccountJson> {
    const input = parse(creditsSchema, body);
    const amount = amountOf('amount', input.amount, input.kind === 'adjustment');
    if (amount === 0n) throw invalidRequest('amount: must not be zero', { field: 'amount' });
    const current = await this.money.account(await this.account(id));
    const after = current.balance + amount;
    if (after > MAX_TOTAL || after < -MAX_TOTAL || current.totalPurchased + (input.kind === 'purchase' ? amount : 0n) > MAX_TOTAL) {
      throw invalidRequest('amount: the balance and the purchase total may not pass 9000000000 credits', { field: 'amount' });
    }
    const account = await this.ledger.addCredits(id, amount, input.kind, this.clock.now());
    if (!account) throw notFound(`no account with id "${id}"`);
    // The credit is recorded: the answer says so even when the limits store cannot tell where the
    // account stands against its budget now (a 503 "retry" would have the operator add it twice).
    return this.view(account).catch(() => ({ ...accountView(account), in_flight: null }));
  }

  /** A new key (an inference key, or a management key with `management: true`); its secret is shown once, here. */
  async createKey(accountId: string, body: unknown): Promise<IssuedKeyInfoJson> {
    const input = this.keys.parseNew(body, 'operator');
    await this.account(accountId);
    const { key, record } = await this.keys.create(accountId, input);
    return { key, data: await this.keyInfo(record) };
  }

  async listKeys(accountId: string): Promise<KeyInfoJson[]> {
    await this.account(accountId);
    const keys = await this.ledger.listKeys(accountId);
    return Promise.all(keys.map((k) => this.keyInfo(k)));
  }

  async patchKey(hash: string, body: unknown): Promise<KeyInfoJson> {
    const updated = await this.keys.update(hash, this.keys.parsePatch(body));
    if (!updated) throw notFound(`no key with hash "${hash}"`);
    return this.keyInfo(updated);
  }

  /** A new secret for the key (same hash, usage and limits), shown once; the old one works `grace_seconds` more. */
  async rotateKey(hash: string, body: unknown): Promise<IssuedKeyInfoJson> {
    const rotated = await this.keys.rotate(hash, this.keys.parseRotation(body));
    if (!rotated) throw notFound(`no key with hash "${hash}"`);
    return { key: rotated.key, data: await this.keyInfo(rotated.record) };
  }

  async deleteKey(hash: string): Promise<DeletedJson> {
    if (!(await this.keys.delete(hash))) throw notFound(`no key with hash "${hash}"`);
    return { deleted: true };
  }

  /** The account's BYOK keys: which configured providers have one stored (never the key). */
  async listByok(accountId: string) {
    await this.account(accountId);
    const stored = new Set(await this.vault.providers(accountId));
    return this.config.providers.map((p) => ({ provider: p.id, stored: stored.has(p.id) }));
  }

  async putByok(accountId: string, provider: string, body: unknown): Promise<void> {
    const input = parse(byokSchema, body);
    if (!this.config.providers.some((p) => p.id === provider)) {
      throw new GatewayError('not_found', `no provider with id "${provider}" is configured`);
    }
    await this.account(accountId);
    await this.vault.put(accountId, provider, input.api_key);
  }

  async deleteByok(accountId: string, provider: string): Promise<void> {
    await this.account(accountId);
    if (!(await this.vault.remove(accountId, provider))) {
      throw notFound(`account "${accountId}" has no key stored for provider "${provider}"`);
    }
  }
}
