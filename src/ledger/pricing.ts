import type { PricingConfig } from '../config/schema.js';
import { femtoToNanoCeil, priceFromString, type Femto, type Nano } from './money.js';

/** An endpoint's prices in femtocredits per unit. */
export interface Pricing {
  prompt: Femto;
  completion: Femto;
  request: Femto;
  image: Femto;
}

export function pricingFrom(cfg: PricingConfig): Pricing {
  return {
    prompt: priceFromString(cfg.prompt),
    completion: priceFromString(cfg.completion),
    request: priceFromString(cfg.request),
    image: priceFromString(cfg.image),
  };
}

/** Token counts of one request, as the upstream reported them (or as the gateway counted them). */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens?: number;
  images?: number;
}

/**
 * A TokenUsage. Every one is made here, with its four fields in this order (absent ones undefined), so
 * that every usage object has one shape and the functions reading them (costOf, billedCompletionTokens,
 * settlement) load their fields from one known layout, not a megamorphic lookup (bench/README.md).
 */
export function tokenUsage(promptTokens: number, completionTokens: number, totalTokens?: number, images?: number): TokenUsage {
  return { promptTokens, completionTokens, totalTokens, images };
}

/**
 * Completion tokens billed: the larger of completion_tokens and total − prompt, since some providers
 * leave reasoning tokens out of completion_tokens but count them in the total (CONTRACT §7).
 */
export function billedCompletionTokens(u: TokenUsage): number {
  const fromTotal = u.totalTokens === undefined ? 0 : u.totalTokens - u.promptTokens;
  return Math.max(u.completionTokens, fromTotal, 0);
}

/** Cost = prompt × prompt price + completion × completion price + request fee + images × image price + extras. */
export function costOf(u: TokenUsage, p: Pricing, extras: Femto = 0n): Nano {
  const femto = BigInt(u.promptTokens) * p.prompt + BigInt(billedCompletionTokens(u)) * p.completion + p.request + BigInt(u.images ?? 0) * p.image + extras;
  return femtoToNanoCeil(femto);
}

/**
 * What a request with `usage` is charged (CONTRACT §7), given its list-price cost (`costOf(usage, p)`)
 * and its plugin charges: the whole sum rounded up to the nanocredit once; for BYOK (`byokFeeFraction`),
 * the fee on the list cost, then the plugins at their price. The charge and the estimate both use it.
 */
export function chargedCost(usage: TokenUsage, p: Pricing, listCost: Nano, plugins: Femto, byokFeeFraction: number | undefined): Nano {
  if (byokFeeFraction !== undefined) return byokFee(listCost, byokFeeFraction) + femtoToNanoCeil(plugins);
  return plugins === 0n ? listCost : costOf(usage, p, plugins);
}

/** The BYOK fee: `fraction` of the list-price cost, rounded up to the nanocredit. */
export function byokFee(listCost: Nano, fraction: number): Nano {
  const ppm = BigInt(Math.round(fraction * 1_000_000));
  return (listCost * ppm + 999_999n) / 1_000_000n;
}
