import { randomFillSync } from 'node:crypto';

/** Random bytes are drawn in blocks, so that a request's id costs no call into the crypto library. */
const POOL_SIZE = 4096;
const ID_BYTES = 10;

/**
 * Generation ids: `gen-` and the Unix second, then 80 random bits (unguessable, and unique across
 * processes), the random parts drawn a block at a time.
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
    return `gen-${Math.floor(nowMs / 1000)}-${part}`;
  }
}
