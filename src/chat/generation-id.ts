import { randomFillSync } from 'node:crypto';

/** Random bytes are drawn in blocks, so that a request's id costs no call into the crypto library. */
const POOL_SIZE = 4096;
const ID_BYTES = 10;

/**
 * Generation ids: `gen-` and the Unix second (as OpenRouter's), then the millisecond within it (three
 * digits) and 80 random bits (unguessable, and unique across processes), the random parts drawn a
 * block at a time. Ids made later sort after (to the millisecond), so that the ledger's index of them
 * takes each commit's new ids on its last page or two instead of one page per id (random ids cost a
 * SQLite commit of six charges ~15 % more, and more as the table grows).
 */
export class GenerationIds {
  private readonly pool = Buffer.allocUnsafe(POOL_SIZE);
  private offset = POOL_SIZE;

  next(nowMs: number): string {
    if (this.offset + ID_BYTES > POOL_SIZE) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const part = this.pool.toString('base64url', this.offset, this.offset + ID_BYTES);
    this.offset += ID_BYTES;
    const ms = Math.floor(nowMs);
    return `gen-${Math.floor(ms / 1000)}-${String(ms % 1000).padStart(3, '0')}${part}`;
  }
}
