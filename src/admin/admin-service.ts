import { z } from 'zod';
import type { Admission } from '../admission/admission.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { GatewayError, invalidRequest, notFound } from '../errors.js';
import { accountTypes, type Account, type KeyPatch, type KeyRecord, type Keys, type Accounts } from '../ledger/ledger.js';
import { creditsFromJson, creditsToJson, MoneyFormatError, type Nano } from '../ledger/money.js';
import { generateApiKey, hashApiKey, labelOf } from '../security/api-key.js';
import type { ByokVault } from '../security/byok-vault.js';
import { accountView, keyInfoView } from './views.js';

const MAX_AMOUNT = creditsFromJson(1_000_000_000);
/** The most a balance or purchase total may reach: 9e9 credits keeps every amount inside a signed 64-bit column. */
const MAX_TOTAL = creditsFromJson(9_000_000_000);

const isoDate = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z' });
const limitReset = z.enum(['daily', 'weekly', 'monthly'], { error: 'must be "daily", "weekly", "monthly" or null' });
const money = z.number({ error: 'must be a number' });

const newAccountSchema = z.strictObject({
  name: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200),
  type: z.enum(accountTypes as [string, ...string[]], { error: `must be one of ${accountTypes.join(', ')}` }).default('prepaid'),
  created_at: isoDate.optional(),
  free_model_limits_exempt: z.boolean({ error: 'must be true or false' }).default(false),
});

const creditsSchema = z.strictObject({
  amount: money,
  kind: z.enum(['purchase', 'adjustment'], { error: 'must be "purchase" or "adjustment"' }).default('purchase'),
});

const keyFields = {
  name: z.string({ error: 'must be a string' }).max(200),
  limit: money.nullable(),
  limit_reset: limitReset.nullable(),
  include_byok_in_limit: z.boolean({ error: 'must be true or false' }),
};
const newKeySchema = z.strictObject({
  name: keyFields.name.optional(),
  limit: keyFields.limit.optional(),
  limit_reset: keyFields.limit_reset.optional(),
  include_byok_in_limit: keyFields.include_byok_in_limit.optional(),
  expires_at: isoDate.nullish(),
});
const keyPatchSchema = z.strictObject({
  name: keyFields.name.optional(),
  limit: keyFields.limit.optional(),
  limit_reset: keyFields.limit_reset.optional(),
  include_byok_in_limit: keyFields.include_byok_in_limit.optional(),
  disabled: z.boolean({ error: 'must be true or false' }).optional(),
});
const byokSchema = z.strictObject({
  api_key: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces or control characters'),
});

function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.length ? issue.path.join('.') : 'body';
  const message = issue?.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue?.message;
  throw invalidRequest(`${path}: ${message ?? 'invalid value'}`, { field: path });
}

/** An amount from JSON as exact nanocredits: at most 9 decimals and 1,000,000,000 in size. */
function amountOf(field: string, value: number, allowNegative: boolean): Nano {
  let amount: Nano;
  try {
    amount = creditsFromJson(value);
  } catch (err) {
    if (err instanceof MoneyFormatError) throw invalidRequest(`${field}: must have at most 9 decimals`, { field });
    throw err;
  }
  const abs = amount < 0n ? -amount : amount;
  if (abs > MAX_AMOUNT) throw invalidRequest(`${field}: must be at most 1000000000 in size`, { field });
  if (!allowNegative && amount < 0n) throw invalidRequest(`${field}: must not be negative`, { field });
  return amount;
}

/** Admin work, shared by the admin API and the CLI verbs. */
export class AdminService {
  constructor(
    private readonly ledger: Accounts & Keys,
    private readonly vault: ByokVault,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly admission: Admission,
  ) {}

  private async account(id: string): Promise<Account> {
    const account = await this.ledger.getAccount(id);
    if (!account) throw notFound(`no account with id "${id}"`);
    return account;
  }

  private async keyInfo(key: KeyRecord) {
    return keyInfoView(key, await this.ledger.keyUsage(key.hash, this.clock.now()));
  }

  async createAccount(body: unknown) {
    const input = parse(newAccountSchema, body);
    const account = await this.ledger.createAccount({
      name: input.name,
      type: input.type as Account['type'],
      createdAt: input.created_at ? Date.parse(input.created_at) : this.clock.now(),
      freeModelLimitsExempt: input.free_model_limits_exempt,
    });
    return this.view(account);
  }

  async getAccount(id: string) {
    return this.view(await this.account(id));
  }

  /** An account, with where it stands against its in-flight spending budget. */
  private async view(account: Account) {
    const status = await this.admission.status(account);
    return {
      ...accountView(account),
      in_flight: { subject: status.subject, budget: creditsToJson(status.budget), held: creditsToJson(status.held) },
    };
  }

  async addCredits(id: string, body: unknown) {
    const input = parse(creditsSchema, body);
    const amount = amountOf('amount', input.amount, input.kind === 'adjustment');
    if (amount === 0n) throw invalidRequest('amount: must not be zero', { field: 'amount' });
    const current = await this.account(id);
    const after = current.balance + amount;
    if (after > MAX_TOTAL || after < -MAX_TOTAL || current.totalPurchased + (input.kind === 'purchase' ? amount : 0n) > MAX_TOTAL) {
      throw invalidRequest('amount: the balance and the purchase total may not pass 9000000000 credits', { field: 'amount' });
    }
    const account = await this.ledger.addCredits(id, amount, input.kind, this.clock.now());
    if (!account) throw notFound(`no account with id "${id}"`);
    return this.view(account);
  }

  async createKey(accountId: string, body: unknown) {
    const input = parse(newKeySchema, body);
    await this.account(accountId);
    const key = generateApiKey();
    const record = await this.ledger.createKey({
      hash: hashApiKey(key),
      accountId,
      name: input.name ?? 'default',
      label: labelOf(key),
      limit: input.limit === undefined || input.limit === null ? null : amountOf('limit', input.limit, false),
      limitReset: input.limit_reset ?? null,
      includeByokInLimit: input.include_byok_in_limit ?? false,
      expiresAt: input.expires_at ? Date.parse(input.expires_at) : null,
      createdAt: this.clock.now(),
    });
    return { key, data: await this.keyInfo(record) };
  }

  async listKeys(accountId: string) {
    await this.account(accountId);
    const keys = await this.ledger.listKeys(accountId);
    return Promise.all(keys.map((k) => this.keyInfo(k)));
  }

  async patchKey(hash: string, body: unknown) {
    const input = parse(keyPatchSchema, body);
    const patch: KeyPatch = {};
    if (input.name !== undefined) patch.name = input.name;
    if (input.limit !== undefined) patch.limit = input.limit === null ? null : amountOf('limit', input.limit, false);
    if (input.limit_reset !== undefined) patch.limitReset = input.limit_reset;
    if (input.include_byok_in_limit !== undefined) patch.includeByokInLimit = input.include_byok_in_limit;
    if (input.disabled !== undefined) patch.disabled = input.disabled;
    const updated = await this.ledger.updateKey(hash, patch);
    if (!updated) throw notFound(`no key with hash "${hash}"`);
    return this.keyInfo(updated);
  }

  async deleteKey(hash: string) {
    if (!(await this.ledger.deleteKey(hash))) throw notFound(`no key with hash "${hash}"`);
    return { deleted: true };
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
