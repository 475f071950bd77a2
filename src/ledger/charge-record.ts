import { z } from 'zod';
import type { Charge } from './ledger.js';

/**
 * A charge as one JSON object (money as strings of nanocredits): what shutdown logs for a charge it
 * could not write, and what `tollgate ledger replay` reads back.
 */
export type ChargeRecord = Omit<Charge, 'totalCost' | 'byokUsage'> & { totalCost: string; byokUsage: string };

/** The `msg` of the log line that carries an unwritten charge. */
export const UNWRITTEN_CHARGE = 'unwritten charge';

export function toChargeRecord(c: Charge): ChargeRecord {
  return { ...c, totalCost: c.totalCost.toString(), byokUsage: c.byokUsage.toString() };
}

const nano = z.string().regex(/^-?\d+$/, 'must be a whole number of nanocredits, as a string');
const chargeRecord = z.object({
  id: z.string().min(1),
  accountId: z.string().min(1),
  keyHash: z.string().min(1),
  model: z.string(),
  provider: z.string(),
  tokensPrompt: z.number().int().nonnegative(),
  tokensCompletion: z.number().int().nonnegative(),
  totalCost: nano,
  byokUsage: nano,
  isByok: z.boolean(),
  streamed: z.boolean(),
  cancelled: z.boolean(),
  finishReason: z.string().nullable(),
  usageSource: z.enum(['upstream', 'counted']).nullable().default(null),
  createdAt: z.number().int(),
  latencyMs: z.number().int().nonnegative(),
});

/** Reads a charge back from its record; throws naming the field that is wrong. */
export function fromChargeRecord(value: unknown): Charge {
  const parsed = chargeRecord.safeParse(value);
  if (!parsed.success) throw new Error(`not a charge record: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { ...parsed.data, totalCost: BigInt(parsed.data.totalCost), byokUsage: BigInt(parsed.data.byokUsage) };
}

/** The charges in a gateway log: every `unwritten charge` line (other lines are skipped). */
export function chargesInLog(text: string): Charge[] {
  const charges: Charge[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { msg?: unknown; charge?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.msg === UNWRITTEN_CHARGE) charges.push(fromChargeRecord(entry.charge));
  }
  return charges;
}
