import type { Generation } from '../ledger/ledger.js';
import { creditsToJson, formatPrice } from '../ledger/money.js';
import type { CatalogModel } from '../routing/catalog.js';
import type { GenerationJson, ModelJson } from './answer-schemas.js';

/** A model as GET /api/v1/models lists it, in the shape OpenRouter's SDK parses. */
export function modelView(m: CatalogModel, created: number): ModelJson {
  const p = m.endpoints[0]?.pricing;
  const price = (v: bigint | undefined) => formatPrice(v ?? 0n);
  return {
    id: m.id,
    canonical_slug: m.id,
    name: m.name,
    created,
    description: m.description,
    context_length: m.contextLength,
    architecture: { input_modalities: ['text'], output_modalities: ['text'], modality: 'text->text', tokenizer: 'Other', instruct_type: null },
    pricing: { prompt: price(p?.prompt), completion: price(p?.completion), request: price(p?.request), image: price(p?.image) },
    top_provider: { is_moderated: false, context_length: m.contextLength, max_completion_tokens: null },
    per_request_limits: null,
    supported_parameters: ['max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'seed', 'tools', 'tool_choice', 'response_format'],
    default_parameters: null,
    supported_voices: null,
    links: { details: `/api/v1/models/${m.id}/endpoints` },
  };
}

/** A generation as GET /api/v1/generation answers it; fields that mean nothing here are null. */
export function generationView(g: Generation): GenerationJson {
  return {
    id: g.id,
    model: g.model,
    provider_name: g.provider,
    created_at: new Date(g.createdAt).toISOString(),
    origin: '',
    data_region: 'global',
    api_type: 'completions',
    is_byok: g.isByok,
    streamed: g.streamed,
    cancelled: g.cancelled,
    finish_reason: g.finishReason,
    native_finish_reason: g.finishReason,
    usage_source: g.usageSource,
    tokens_prompt: g.tokensPrompt,
    tokens_completion: g.tokensCompletion,
    native_tokens_prompt: g.tokensPrompt,
    native_tokens_completion: g.tokensCompletion,
    native_tokens_cached: null,
    native_tokens_reasoning: null,
    native_tokens_completion_images: null,
    total_cost: creditsToJson(g.totalCost),
    usage: creditsToJson(g.totalCost),
    upstream_inference_cost: g.isByok ? creditsToJson(g.byokUsage) : null,
    cache_discount: null,
    latency: g.latencyMs,
    generation_time: g.latencyMs,
    moderation_latency: null,
    app_id: null,
    num_fetches: null,
    num_input_audio_prompt: null,
    num_media_completion: null,
    num_media_prompt: null,
    num_search_results: null,
    external_user: null,
    http_referer: null,
    preset_id: null,
    router: null,
    service_tier: null,
    upstream_id: null,
    user_agent: null,
    web_search_engine: null,
    workspace_id: null,
    provider_responses: null,
  };
}
