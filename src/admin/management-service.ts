import type { AccountMoney } from '../admission/account-money.js';
import { notFound } from '../errors.js';
import type { KeyRecord, Keys } from '../ledger/ledger.js';
import type { KeyService } from './key-service.js';
import { parseInput } from './parse-input.js';
import { keysListQuerySchema } from './request-schemas.js';
import type { DeletedJson, IssuedManagedKeyJson, ManagedKeyAnswerJson, ManagedKeyJson, ManagedKeyListJson } from './answer-schemas.js';
import { managedKeyView } from './views.js';

/** Keys a page of GET /api/v1/keys holds (CONTRACT §9). */
export const KEYS_PAGE_SIZE = 100;

/**
 * The self-service management API (CONTRACT §9): a management key manages the inference keys of its
 * own account. Another account's key, a management key and a deleted key are all "no such key" (404),
 * so that a caller learns nothing of keys that are not its to manage.
 */
export class ManagementService {
  constructor(
    private readonly ledger: Pick<Keys, 'findKey' | 'listKeys'>,
    private readonly keys: KeyService,
    private readonly money: AccountMoney,
  ) {}

  private async view(key: KeyRecord): Promise<ManagedKeyJson> {
    return managedKeyView(key, (await this.money.keyView(key.accountId, key.hash)).key);
  }

  /** The key `hash`, if `owner` may manage it; else 404. */
  private async owned(owner: KeyRecord, hash: string): Promise<KeyRecord> {
    const key = await this.ledger.findKey(hash);
    if (!key || key.accountId !== owner.accountId || key.management) throw notFound(`no key with hash "${hash}"`);
    return key;
  }

  /** GET /api/v1/keys?offset=&include_disabled=: a page of the account's inference keys, oldest first. */
  async list(owner: KeyRecord, query: unknown): Promise<ManagedKeyListJson> {
    const q = parseInput(keysListQuerySchema, query);
    // Keys carry their account as workspace_id: another workspace holds none of them.
    if (q.workspace_id !== undefined && q.workspace_id !== owner.accountId) return { data: [] };
    const keys = await this.ledger.listKeys(owner.accountId, {
      management: false,
      includeDisabled: q.include_disabled === 'true',
      page: { offset: q.offset ?? 0, limit: KEYS_PAGE_SIZE },
    });
    return { data: await Promise.all(keys.map((k) => this.view(k))) };
  }

  async create(owner: KeyRecord, body: unknown): Promise<IssuedManagedKeyJson> {
    const input = this.keys.parseNew(body, 'owner');
    // Keys carry their account as workspace_id: a management key's own is the only one it can name.
    const workspace = (body as { workspace_id?: string }).workspace_id;
    if (workspace !== undefined && workspace !== owner.accountId) throw notFound(`no workspace "${workspace}" (this key's is "${owner.accountId}")`);
    const { key, record } = await this.keys.create(owner.accountId, input);
    return { data: await this.view(record), key };
  }

  async get(owner: KeyRecord, hash: string): Promise<ManagedKeyAnswerJson> {
    return { data: await this.view(await this.owned(owner, hash)) };
  }

  async update(owner: KeyRecord, hash: string, body: unknown): Promise<ManagedKeyAnswerJson> {
    const patch = this.keys.parsePatch(body);
    await this.owned(owner, hash);
    const updated = await this.keys.update(hash, patch);
    if (!updated) throw notFound(`no key with hash "${hash}"`);
    return { data: await this.view(updated) };
  }

  async rotate(owner: KeyRecord, hash: string, body: unknown): Promise<IssuedManagedKeyJson> {
    const grace = this.keys.parseRotation(body);
    await this.owned(owner, hash);
    const rotated = await this.keys.rotate(hash, grace);
    if (!rotated) throw notFound(`no key with hash "${hash}"`);
    return { key: rotated.key, data: await this.view(rotated.record) };
  }

  async delete(owner: KeyRecord, hash: string): Promise<DeletedJson> {
    await this.owned(owner, hash);
    if (!(await this.keys.delete(hash))) throw notFound(`no key with hash "${hash}"`);
    return { deleted: true };
  }
}
