import { invalidRequest } from '../errors.js';
import { GatewayError } from '../errors.js';
import type { Catalog, CatalogModel, Endpoint } from './catalog.js';

export interface ProviderPreferences {
  order?: string[] | undefined;
  only?: string[] | undefined;
  ignore?: string[] | undefined;
  allow_fallbacks?: boolean | undefined;
}

/** One place the request may be served: a model and one of its endpoints. */
export interface Attempt {
  model: CatalogModel;
  endpoint: Endpoint;
}

/** The models a request names, in the order they are tried: `model`, then the `models` fallbacks. */
export function requestedModels(catalog: Catalog, model: string | undefined, models: string[] | undefined): CatalogModel[] {
  const found: CatalogModel[] = [];
  if (model) found.push(catalogModel(catalog, model));
  for (const id of models ?? []) {
    if (!found.some((m) => m.id === id)) found.push(catalogModel(catalog, id));
  }
  if (found.length === 0) throw invalidRequest('model is required: name a model id (see GET /api/v1/models)');
  return found;
}

function catalogModel(catalog: Catalog, id: string): CatalogModel {
  const found = catalog.get(id);
  if (!found) {
    throw new GatewayError('unknown_model', `unknown model "${id}": see GET /api/v1/models for the models served here`, {
      metadata: { model: id },
    });
  }
  return found;
}

function endpointsFor(model: CatalogModel, prefs: ProviderPreferences | undefined): Endpoint[] {
  let eps = model.endpoints;
  if (prefs?.only?.length) eps = eps.filter((e) => prefs.only?.includes(e.provider));
  if (prefs?.ignore?.length) eps = eps.filter((e) => !prefs.ignore?.includes(e.provider));
  const order = prefs?.order ?? [];
  if (order.length) {
    const ordered = order.flatMap((p) => eps.filter((e) => e.provider === p));
    const rest = eps.filter((e) => !order.includes(e.provider));
    eps = prefs?.allow_fallbacks === false ? ordered : [...ordered, ...rest];
  } else if (prefs?.allow_fallbacks === false) {
    eps = eps.slice(0, 1);
  }
  return eps;
}

/**
 * Every attempt a request may make, in order: the endpoints of the first model (as the provider
 * preferences order and filter them), then those of each fallback model.
 */
export function planAttempts(models: CatalogModel[], prefs: ProviderPreferences | undefined): Attempt[] {
  const attempts: Attempt[] = [];
  for (const model of models) {
    for (const endpoint of endpointsFor(model, prefs)) attempts.push({ model, endpoint });
  }
  if (attempts.length === 0) {
    throw invalidRequest('no provider can serve this request: the provider preferences (only, ignore, order) exclude every endpoint of the requested models');
  }
  return attempts;
}
