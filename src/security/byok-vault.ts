import type { ByokSecrets } from '../ledger/ledger.js';
import type { SecretBox } from './secret-box.js';

/**
 * The accounts' own provider keys (BYOK), sealed at rest and opened only to call a provider. Opened
 * keys are cached per account for `ttlMs`; this process drops an account's entry when its keys change.
 */
export class ByokVault {
  private readonly cache = new Map<string, { at: number; keys: Map<string, string> }>();

  constructor(
    private readonly ledger: ByokSecrets,
    private readonly box: SecretBox,
    private readonly now: () => number,
    private readonly ttlMs = 30_000,
  ) {}

  async keysFor(accountId: string): Promise<ReadonlyMap<string, string>> {
    const hit = this.cache.get(accountId);
    if (hit && this.now() - hit.at < this.ttlMs) return hit.keys;
    const sealed = await this.ledger.byokSecrets(accountId);
    const keys = new Map<string, string>();
    for (const [provider, ciphertext] of sealed) keys.set(provider, this.box.open(ciphertext));
    this.cache.set(accountId, { at: this.now(), keys });
    return keys;
  }

  async put(accountId: string, provider: string, apiKey: string): Promise<void> {
    await this.ledger.putByokSecret(accountId, provider, this.box.seal(apiKey), this.now());
    this.cache.delete(accountId);
  }

  async remove(accountId: string, provider: string): Promise<boolean> {
    const removed = await this.ledger.deleteByokSecret(accountId, provider);
    this.cache.delete(accountId);
    return removed;
  }
}
