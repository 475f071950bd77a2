import type { Admission } from '../admission/admission.js';
import { isPromise } from '../awaitable.js';
import type { FreeModelLimits } from '../admission/free-limits.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { ErrorMetadata } from '../error-body.js';
import { GatewayError, invalidRequest } from '../errors.js';
import { accountOfKey } from '../ledger/account-of-key.js';
import type { Account, Accounts, Charges, KeyRecord } from '../ledger/ledger.js';
import { priceFromString, type Femto } from '../ledger/money.js';
import { tokenUsage, type TokenUsage } from '../ledger/pricing.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { searchResultsTokenBound, withSearchResults, type WebSearch } from '../plugins/web-search.js';
import { finishReasonOf } from '../providers/stream-event.js';
import { answerTexts, DeliveredChoices } from '../providers/delivered-text.js';
import { ProviderError, type ChatBody, type Chunk, type ProviderAdapter, type ProviderFailure, type UpstreamBody } from '../providers/provider.js';
import { isJsonObject } from '../json-object.js';
import type { Catalog, CatalogModel } from '../routing/catalog.js';
import type { Cooldowns } from '../routing/cooldowns.js';
import { planAttempts, requestedModels, type Attempt } from '../routing/plan.js';
import { route, type Routed } from '../routing/route.js';
import type { ByokVault } from '../security/byok-vault.js';
import { countImages, countPromptTokens, countTokens, promptSideText } from '../tokenizer/count-tokens.js';
import { answerWriter, chunkHead, errorChunk, relayedEvent, usageBody, usageChunkText, type Served } from './normalize.js';
import type { ChatUsageJson } from './answer-schemas.js';
import { NO_BYTES, utf8Bytes, type Utf8Bytes } from '../utf8-bytes.js';
import { hasDuplicateKeys, keyIn, objectMembers, spliceMembers } from './json-members.js';
import { GATEWAY_FIELDS, parseChatRequest, requestedMaxTokens, type ChatRequest } from './request-schema.js';
import { billedUsage, type BilledUsage } from './billed-usage.js';
import { GenerationIds } from './generation-id.js';
import { Settlement } from './settlement.js';
import { cancelMessage, type CancelSignal } from '../cancellation.js';

export interface ChatServiceDeps {
  config: Config;
  catalog: Catalog;
  providers: ReadonlyMap<string, ProviderAdapter>;
  ledger: Accounts & Charges;
  vault: ByokVault;
  clock: Clock;
  admission: Admission;
  freeLimits: FreeModelLimits;
  cooldowns: Cooldowns;
  webSearch: WebSearch | undefined;
  logger: Logger;
  metrics: Metrics;
}

/** A request that a provider accepted: what served it and how it will be settled. */
export interface Started {
  served: Served;
  routed: Routed;
  request: ChatRequest;
  /** The messages as sent upstream (with plugin results). */
  messages: readonly unknown[];
  settlement: Settlement;
  /** Plugin charges the request incurred, in femtocredits (rounded with the rest of the cost). */
  extras: Femto;
  startedAt: number;
  /** How the upstream failed after the stream was under way (the client got the error event), for the log. */
  streamFailure: ProviderFailure | undefined;
}

/** Server-sent events: one or more `data: …` events, ready to write, as their UTF-8 bytes (utf8-bytes.ts). */
export type SseText = Utf8Bytes;

/** What the consumer of `relay` answers an item with: the item was written, and the consumer stops there. */
export const WRITTEN_THEN_STOP = 'written-then-stop';
/** What the consumer of `relay` resumes it with: undefined when it wrote the last item and wants more. */
export type RelayReply = typeof WRITTEN_THEN_STOP | undefined;

/** The SDK's error_type for a failure (OpenRouter's stream error metadata). */
function errorTypeOf(failure: ProviderFailure): string {
  switch (failure.kind) {
    case 'rate_limited':
      return 'rate_limit_exceeded';
    case 'timeout':
      return 'timeout';
    case 'network':
      return 'provider_unavailable';
    default:
      return 'server';
  }
}

/** The empty sets most requests have (no free model, no key of the account's own): one each, not one a request. */
const NO_MODELS: ReadonlySet<CatalogModel> = new Set();
const NO_PROVIDERS: ReadonlySet<string> = new Set();

/** Top-level fields of the client's body that are not passed on as they are. */
const NOT_PASSED_ON: readonly string[] = [...GATEWAY_FIELDS, 'model', 'stream'];
const notPassedOn = keyIn(NOT_PASSED_ON);
const notPassedOnOrMessages = keyIn([...NOT_PASSED_ON, 'messages']);

/**
 * What the upstream is sent: the client's body without the gateway's own fields, otherwise unchanged.
 * "The gateway never adds or changes a client's parameter to force the bound" (CONTRACT §7): a request
 * without a completion cap is sent without one; `default_max_tokens` is only what its hold assumes.
 * `model` and `stream` are the adapter's to set. The text is spliced from the client's own when the
 * messages were not changed (a plugin adds to them) and no top-level key appears twice; the object is
 * then built only if an adapter asks for it (the OpenAI adapter sends the text).
 */
class RelayedBody implements UpstreamBody {
  private built: ChatBody | undefined;

  constructor(
    readonly members: string,
    readonly streamOptions: ChatBody | undefined,
    private readonly req: ChatRequest,
    private readonly messages: readonly unknown[],
  ) {}

  /**
   * A getter of the class, not of an object literal: a literal's getter is a new function each time,
   * so each body would get a hidden class of its own, and hidden classes live in the old generation,
   * where they kept every request's text and closures through the young generation's collections
   * until the next full one (bench/README.md, ninth session).
   */
  get value(): ChatBody {
    return (this.built ??= withoutGatewayFields(this.req, this.messages));
  }
}

function withoutGatewayFields(req: ChatRequest, messages: readonly unknown[]): ChatBody {
  const value: ChatBody = { ...req, messages };
  for (const field of NOT_PASSED_ON) delete value[field];
  return value;
}

/**
 * The body sent upstream: the client's text with the gateway's own fields cut out (so that every
 * other field goes as the client wrote it: a number of many digits, an escape), of a key written
 * twice the last (as the gateway read it), and the messages written anew only when a plugin changed
 * them; rebuilt from the parsed body only when the text is not an object's.
 */
function upstreamBody(req: ChatRequest, messages: readonly unknown[], rawText: string | undefined): UpstreamBody {
  const members = rawText !== undefined ? objectMembers(rawText) : undefined;
  if (members) {
    const sameMessages = messages === req.messages;
    let drop: (key: string, index: number) => boolean = sameMessages ? notPassedOn : notPassedOnOrMessages;
    if (hasDuplicateKeys(members)) {
      const last = new Map(members.map((m, i) => [m.key, i]));
      const dropped = drop;
      drop = (key, i) => dropped(key, i) || last.get(key) !== i;
    }
    const tail = sameMessages ? '' : `"messages":${JSON.stringify(messages)}`;
    return new RelayedBody(spliceMembers(rawText as string, members, '', drop, tail), streamOptionsOf(req), req, messages);
  }
  const value = withoutGatewayFields(req, messages);
  return { value, members: JSON.stringify(value).slice(1, -1), streamOptions: streamOptionsOf(req) };
}

/** The client's `stream_options`, when it is an object (anything else was never an option to pass on). */
function streamOptionsOf(req: ChatRequest): ChatBody | undefined {
  const o = req.stream_options;
  return isJsonObject(o) ? o : undefined;
}

/** What counts each free model an attempt tries against the free-model limits, once a model (made only for a request that has one). */
function freeModelCounter(
  freeLimits: ChatServiceDeps['freeLimits'],
  account: Account,
  limitedFree: ReadonlySet<CatalogModel>,
  exemptEndpoint: (e: Attempt['endpoint']) => boolean,
): (attempt: Attempt) => Promise<void> {
  const counted = new Set<string>();
  return async (attempt) => {
    if (!limitedFree.has(attempt.model) || exemptEndpoint(attempt.endpoint) || counted.has(attempt.model.id)) return;
    await freeLimits.count(account, attempt.model, counted.size === 0);
    counted.add(attempt.model.id);
  };
}

/**
 * The chat-completions pipeline behind the HTTP route: validate, plan, admit (402s before any
 * provider is called), route to a provider, relay the answer in the gateway's own shape and settle
 * the request exactly once.
 */
export class ChatService {
  /** Each provider's configured key, by provider id. */
  private readonly platformKeys = new Map<string, string | undefined>();
  private readonly ids = new GenerationIds();

  constructor(private readonly deps: ChatServiceDeps) {
    for (const p of deps.config.providers) this.platformKeys.set(p.id, p.type === 'openai' ? p.api_key : undefined);
  }

  private usesWebPlugin(request: ChatRequest): boolean {
    let web = false;
    for (const plugin of request.plugins ?? []) {
      if (plugin.id !== 'web') throw invalidRequest(`plugins: unknown plugin "${plugin.id}" (this gateway offers "web")`, { field: 'plugins' });
      if (!this.deps.webSearch) throw invalidRequest('plugins: the "web" plugin is not configured on this gateway (plugins.web)', { field: 'plugins' });
      web = true;
    }
    return web;
  }

  /** `rawText` is the body's JSON text as the client sent it, when the caller has it. */
  async start(key: KeyRecord, rawBody: unknown, signal: CancelSignal, rawText?: string): Promise<Started> {
    const { catalog, clock, vault, providers, config, ledger, admission } = this.deps;
    const request = parseChatRequest(rawBody);
    const models = requestedModels(catalog, request.model, request.models);
    const maxTokens = requestedMaxTokens(request);
    const primary = models[0];
    const attempts = planAttempts(models, request.provider ?? undefined);
    const web = this.usesWebPlugin(request);
    const webPrice = web ? priceFromString(config.plugins.web?.price ?? '0') : 0n;

    // Both at once when cached (awaitable.ts): no promise a request for either.
    const accountRead = accountOfKey(ledger, key);
    const account = isPromise(accountRead) ? await accountRead : accountRead;
    const byokRead = vault.keysFor(key.accountId);
    const byokKeys = isPromise(byokRead) ? await byokRead : byokRead;
    // Free-model limits apply to each attempt on a free model (CONTRACT §7), unless the account is
    // exempt, or the attempt's endpoint is marked exempt or served with the account's own key. The
    // first attempt is checked now (its 429 comes before any 402); each is counted when tried.
    const exemptEndpoint = (e: Attempt['endpoint']) => e.freeLimitsExempt || byokKeys.has(e.provider);
    const limitedFree: ReadonlySet<CatalogModel> =
      account.freeModelLimitsExempt || !models.some((m) => m.isFree)
        ? NO_MODELS
        : new Set(models.filter((m) => m.isFree && attempts.some((a) => a.model === m && !exemptEndpoint(a.endpoint))));
    // CONTRACT §6: a negative balance is refused before the free-model limits (admission checks it for the rest).
    const first = attempts[0];
    const freeFirst = primary !== undefined && first?.model === primary && limitedFree.has(primary) && !exemptEndpoint(first.endpoint);
    if (freeFirst) {
      await admission.checkBalanceNotNegative(account);
      await this.deps.freeLimits.check(account, primary);
    }

    const id = this.ids.next(clock.now());
    const admitted = admission.admit({
      id,
      key,
      account,
      attempts,
      messages: request.messages,
      sideText: promptSideText(request),
      addedPromptTokens: web ? searchResultsTokenBound(config.plugins.web?.max_results ?? 0) : 0,
      choices: request.n ?? 1,
      maxTokens,
      balanceChecked: freeFirst,
      byokProviders: byokKeys.size === 0 ? NO_PROVIDERS : new Set(byokKeys.keys()),
      byokFeeFraction: config.limits.byok_fee,
      pluginCharges: webPrice,
      kind: { free: models.every((m) => m.isFree), paidPlugin: webPrice > 0n },
    });
    const ticket = isPromise(admitted) ? await admitted : admitted;
    this.deps.metrics.held(ticket.held);

    let routed: Routed;
    let messages: readonly unknown[] = request.messages;
    let extras = 0n;
    const startedAt = clock.now();
    try {
      if (web && this.deps.webSearch) {
        try {
          messages = withSearchResults(request.messages, await this.deps.webSearch.search(request.messages, signal));
          extras = webPrice;
        } catch (err) {
          // The answer goes on without results, and the plugin is not charged.
          this.deps.logger.warn({ err: (err as Error).message }, 'web search failed; answering without results');
        }
      }
      routed = await route({
        attempts,
        body: upstreamBody(request, messages, rawText),
        stream: request.stream === true,
        providers,
        byokKey: (p) => byokKeys.get(p),
        platformKey: (p) => this.platformKeys.get(p),
        signal,
        cooldowns: this.deps.cooldowns,
        // Only where a free model is counted: an attempt with nothing to count waits for nothing.
        beforeAttempt: limitedFree.size > 0 ? freeModelCounter(this.deps.freeLimits, account, limitedFree, exemptEndpoint) : undefined,
        metrics: this.deps.metrics,
        now: () => clock.now(),
      });
    } catch (err) {
      this.deps.metrics.held(-ticket.held);
      await ticket.settle({ cost: 0n, byokUsage: 0n, chargedAt: startedAt }, Promise.resolve(), (e) =>
        this.deps.logger.error({ err: e }, 'settling holds failed'),
      );
      throw err;
    }
    const served: Served = {
      id,
      model: routed.attempt.model.id,
      provider: routed.attempt.endpoint.provider,
      created: Math.floor(startedAt / 1000),
    };
    const settlement = new Settlement(
      ledger,
      {
        id: served.id,
        accountId: key.accountId,
        keyHash: key.hash,
        model: served.model,
        provider: served.provider,
        isByok: routed.isByok,
        streamed: routed.answer.kind === 'stream',
        startedAt,
      },
      config.limits.byok_fee,
      ticket,
      { onError: (err) => this.deps.logger.error({ err }, 'settling holds failed'), metrics: this.deps.metrics, now: () => clock.now() },
    );
    return { served, routed, request, messages, settlement, extras, startedAt, streamFailure: undefined };
  }

  /** The usage the gateway counts: the prompt, and what was delivered (a text, or one a choice, each counted on its own). */
  private countedUsage(started: Started, completion: string | readonly string[]): TokenUsage {
    const messages = started.messages;
    let completionTokens = 0;
    if (typeof completion === 'string') completionTokens = countTokens(completion);
    else for (const text of completion) completionTokens += countTokens(text);
    return tokenUsage(countPromptTokens(messages, promptSideText(started.request)), completionTokens, undefined, countImages(messages));
  }

  /** The usage a request is charged: the upstream's when believable, else the gateway's count (CONTRACT §7). */
  private billed(started: Started, upstream: TokenUsage | undefined, completionText: () => string | readonly string[], endedNormally: boolean): BilledUsage {
    const billed = billedUsage({
      upstream,
      counted: () => this.countedUsage(started, completionText()),
      contextLength: started.routed.attempt.model.contextLength,
      endedNormally,
    });
    const u = billed.usage;
    return { usage: tokenUsage(u.promptTokens, u.completionTokens, u.totalTokens, countImages(started.messages)), source: billed.source };
  }

  /** The whole answer of a non-streamed request as JSON text, settled: it resolves once its charge is durable. */
  async complete(started: Started): Promise<string> {
    const { routed, settlement, served } = started;
    if (routed.answer.kind !== 'json') throw new GatewayError('internal', 'expected a whole answer');
    const { body, text } = routed.answer;
    // The answer is written before it is charged, but for its usage: one that cannot be written is
    // not delivered, and so not charged.
    let write: (usage: ChatUsageJson) => string;
    try {
      write = answerWriter(text, body, served);
    } catch (err) {
      throw new GatewayError('upstream_failed', "the provider's answer could not be relayed (nested too deeply)", { cause: err });
    }
    const { usage, source } = this.billed(started, routed.answer.usage, () => answerTexts(body), true);
    const finish = finishReasonOf(body.choices) ?? null;
    const { cost, durable } = settlement.settle({
      usage,
      usageSource: source,
      pricing: routed.attempt.endpoint.pricing,
      extras: started.extras,
      finishReason: finish,
      cancelled: false,
      endedAt: this.deps.clock.now(),
    });
    // An answer delivered in full is charged durably before it is sent (CONTRACT §8).
    await durable;
    return write(usageBody(usage, cost, routed.isByok, source === 'upstream' ? body.usage : undefined));
  }

  /**
   * The relayed stream: chunks in the gateway's shape (yielded, one item an upstream read), then one
   * usage chunk with the cost and done, or, for an upstream failure after output, the spec's error
   * event: the closing events are the generator's return value, so that they go out with the end of
   * the response in one write. An answer that came whole in one upstream read goes out with them,
   * in one write as a whole answer does; a stream already under way sends its last read at once (its
   * last tokens do not wait for the commit, and a client gone meanwhile shows as a failed write). A
   * client that goes away (the consumer stops, or `signal` aborts) is charged for what was delivered:
   * an item counts once the consumer resumes the generator after it (it wrote the item), with
   * WRITTEN_THEN_STOP when it wrote it and stops there; an item it drops unwritten (return()) does not.
   * Settles once.
   */
  async *relay(started: Started, signal: CancelSignal): AsyncGenerator<SseText, SseText | undefined, RelayReply> {
    const { routed, settlement, served } = started;
    if (routed.answer.kind !== 'stream') throw new GatewayError('internal', 'expected a stream');
    const head = chunkHead(served);
    // What the stream delivered to each choice (JSON strings' bodies, in bytes): read only if it has to be counted.
    const delivered = new DeliveredChoices();
    let upstreamUsage: TokenUsage | undefined;
    let upstreamUsageRaw: unknown;
    let finish: string | null = null;
    let ended = false;
    // An answer whole in its first read: its events go out with the closing events, in one write.
    let lastRead = NO_BYTES;
    let underWay = false;
    // A stream that did not reach its end is charged for everything it delivered (CONTRACT §7).
    const finalUsage = (endedNormally: boolean) => this.billed(started, upstreamUsage, () => delivered.texts(), endedNormally);
    const settle = (cancelled: boolean, billed = finalUsage(false)) => {
      this.deps.metrics.upstreamDuration(served.provider, (this.deps.clock.now() - routed.sentAt) / 1000);
      return settlement.settle({
        usage: billed.usage,
        usageSource: billed.source,
        pricing: routed.attempt.endpoint.pricing,
        extras: started.extras,
        finishReason: finish,
        cancelled,
        endedAt: this.deps.clock.now(),
      });
    };
    try {
      // One write per upstream read: the events of a batch go out together.
      for await (const batch of routed.answer.events) {
        // What the batch delivers counts once it is written: after the yield, when the consumer resumes.
        let out = NO_BYTES;
        const batchDelivered = new DeliveredChoices();
        let batchFinish: string | null = finish;
        let batchUsage: TokenUsage | undefined = upstreamUsage;
        let batchUsageRaw: unknown = upstreamUsageRaw;
        for (const event of batch.events) {
          if (event.usage && event.chunk) {
            batchUsage = event.usage;
            batchUsageRaw = event.chunk.usage ?? (event.chunk.x_groq as Chunk | undefined)?.usage;
          }
          const relayed = relayedEvent(event, served, head);
          if (relayed === undefined) continue;
          batchDelivered.add(event);
          batchFinish = event.finishReason ?? batchFinish;
          out = (out + relayed) as Utf8Bytes;
        }
        let reply: RelayReply;
        if (batch.last && !underWay) {
          lastRead = (lastRead + out) as Utf8Bytes;
        } else if (lastRead || out) {
          // (Were a batch ever to follow one marked last, both go out, in order.)
          const text = (lastRead + out) as Utf8Bytes;
          lastRead = NO_BYTES;
          underWay = true;
          // The consumer resumes this once it wrote the text; a text it did not write ends the
          // generator here (return()), and so is not counted.
          reply = yield text;
        }
        delivered.addAll(batchDelivered);
        finish = batchFinish;
        upstreamUsage = batchUsage;
        upstreamUsageRaw = batchUsageRaw;
        if (reply === WRITTEN_THEN_STOP) return undefined; // the client is gone: `finally` charges what was written
      }
      const billed = finalUsage(true);
      const { cost, durable } = settle(false, billed);
      ended = true;
      // The usage chunk completes the answer: it goes out once the charge is durable (CONTRACT §8).
      await durable;
      const usage = usageBody(billed.usage, cost, routed.isByok, billed.source === 'upstream' ? upstreamUsageRaw : undefined);
      return `${lastRead}data: ${usageChunkText(head, usage)}\n\ndata: [DONE]\n\n` as Utf8Bytes;
    } catch (err) {
      const cancelled = signal.aborted;
      finish = cancelled ? finish : 'error';
      settle(cancelled);
      ended = true;
      // The client may be gone (then nobody reads this) or the gateway is shutting down: either way
      // the stream ends with the spec's error event, never silently.
      const failure: ProviderFailure = cancelled
        ? { kind: 'network', message: cancelMessage(signal.reason) }
        : err instanceof ProviderError
          ? err.failure
          : { kind: 'network', message: 'the stream failed' };
      if (!cancelled) started.streamFailure = failure;
      const code = cancelled ? 503 : failure.kind === 'rate_limited' ? 429 : 502;
      const metadata: ErrorMetadata = { error_type: errorTypeOf(failure), provider_name: served.provider };
      if (failure.code !== undefined) metadata.provider_code = failure.code;
      const message = cancelled ? failure.message : `upstream stream ended with an error: ${failure.message}`;
      return `${lastRead}data: ${utf8Bytes(JSON.stringify(errorChunk(served, code, message, metadata)))}\n\n` as Utf8Bytes;
    } finally {
      // The consumer stopped early (the client went away): charge what was delivered.
      if (!ended) settle(true);
    }
  }
}
