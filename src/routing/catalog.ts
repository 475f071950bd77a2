import type { Config, EndpointConfig, ModelConfig, PartTokensConfig } from '../config/schema.js';
import { pricingFrom, type Pricing } from '../ledger/pricing.js';

export interface Endpoint {
  provider: string;
  upstreamModel: string;
  pricing: Pricing;
  config: EndpointConfig;
  freeLimitsExempt: boolean;
}

export interface CatalogModel {
  id: string;
  name: string;
  description: string;
  contextLength: number;
  isFree: boolean;
  /** Tokens the estimate counts for each image, audio and file part (the model's, else the defaults). */
  partTokens: PartTokensConfig;
  endpoints: Endpoint[];
  config: ModelConfig;
}

/** The public models and their endpoints, built once from config with prices parsed to exact units. */
export class Catalog {
  private readonly models = new Map<string, CatalogModel>();

  constructor(config: Config) {
    for (const m of config.models) {
      this.models.set(m.id, {
        id: m.id,
        name: m.name ?? m.id,
        description: m.description,
        contextLength: m.context_length,
        isFree: m.id.endsWith(config.limits.free_models.suffix),
        partTokens: { ...config.limits.in_flight.part_tokens, ...m.part_tokens },
        config: m,
        endpoints: m.endpoints.map((e) => ({
          provider: e.provider,
          upstreamModel: e.model,
          pricing: pricingFrom(e.pricing),
          config: e,
          freeLimitsExempt: e.free_limits_exempt,
        })),
      });
    }
  }

  get(id: string): CatalogModel | undefined {
    return this.models.get(id);
  }

  list(): CatalogModel[] {
    return [...this.models.values()];
  }
}
