// Imported: globalThis's Buffer is a getter, called on every use (bench/README.md, thirty-fifth session).
import { Buffer } from 'node:buffer';
import { chargedCost, costOf, tokenUsage, type Pricing } from '../ledger/pricing.js';
import type { Femto, Nano } from '../ledger/money.js';
import type { Attempt } from '../routing/plan.js';
import { contentText, countPromptTokens, mediaPartTokens, mediaParts } from '../tokenizer/count-tokens.js';
import { jsonText } from '../json-text.js';

/**
 * A bound on a prompt's text tokens that never undercounts: every o200k token is at least one UTF-8
 * byte, so the byte count (plus the chat format's framing) bounds the token count. It costs a pass over
 * the text, not a tokenizer run; `countPromptTokens` is the exact count to refine with when it matters.
 * It reads the same fields as `countPromptTokens` (text, `name`, `tool_calls`, `function_call`); image,
 * audio and file parts are added to both alike, per model (`mediaPartTokens`).
 */
export function promptTokenBound(messages: readonly unknown[], sideText = ''): number {
  let total = 3 + Buffer.byteLength(sideText, 'utf8');
  for (const m of messages) {
    const msg = (m ?? {}) as { content?: unknown; name?: unknown; tool_calls?: unknown; function_call?: unknown };
    total += 3 + Buffer.byteLength(contentText(msg.content), 'utf8');
    if (typeof msg.name === 'string') total += Buffer.byteLength(msg.name, 'utf8');
    if (msg.tool_calls !== undefined) total += Buffer.byteLength(jsonText(msg.tool_calls, 'messages[].tool_calls'), 'utf8');
    if (msg.function_call !== undefined && msg.function_call !== null)
      total += Buffer.byteLength(jsonText(msg.function_call, 'messages[].function_call'), 'utf8');
  }
  return total;
}

export interface EstimateInput {
  attempts: readonly Attempt[];
  messages: readonly unknown[];
  /** Prompt-side fields besides the messages (tools, response_format), as text. */
  sideText: string;
  /** A bound on tokens the gateway itself adds to the prompt (plugin results). */
  addedPromptTokens: number;
  /** The request's max_tokens, or the configured default cap when it set none. */
  completionTokens: number;
  /** How many completions the request asks for (`n`). */
  choices: number;
  /** Providers the account stored its own key for. */
  byokProviders: ReadonlySet<string>;
  byokFeeFraction: number;
  /** Paid plugin charges the request will incur, in femtocredits. */
  pluginCharges: Femto;
}

export interface Estimate {
  /** The most the request can cost in credits, over every endpoint it may be routed to: what the balance must cover. */
  credits: Nano;
  /**
   * The in-flight estimate proper (CONTRACT §7; the spec: "at the endpoint's token prices"): the same
   * for the tokens alone, without the request fee, images and plugins. What the in-flight budget holds.
   */
  tokenCredits: Nano;
  /** What it can add to its key's usage as the limit counts it (BYOK list cost included when asked). */
  keyWithByok: Nano;
  /** Whether any endpoint prices tokens (a request whose cost has no token component is not held). */
  tokenComponent: boolean;
  /** Served entirely with the account's own provider keys. */
  allByok: boolean;
  /** Prompt tokens the estimate used, and whether that is the exact count or the byte bound. */
  promptTokens: number;
  exact: boolean;
}

/**
 * The in-flight estimate (CONTRACT §7): input tokens × prompt price + completion cap × completion
 * price, at the most expensive endpoint the request may be routed to (`tokenCredits`); and the same
 * with the request fee, images and plugins (`credits`), which the balance and the key must cover.
 */
export function estimate(input: EstimateInput, exact: boolean): Estimate {
  const textTokens = (exact ? countPromptTokens(input.messages, input.sideText) : promptTokenBound(input.messages, input.sideText)) + input.addedPromptTokens;
  const parts = mediaParts(input.messages);
  const completionTokens = input.completionTokens * input.choices;
  let promptTokens = textTokens;
  let credits = 0n;
  let tokenCredits = 0n;
  let keyWithByok = 0n;
  let tokenComponent = false;
  let allByok = input.attempts.length > 0;
  for (const { model, endpoint } of input.attempts) {
    const p = endpoint.pricing;
    if (p.prompt > 0n || p.completion > 0n) tokenComponent = true;
    const byok = input.byokProviders.has(endpoint.provider);
    if (!byok) allByok = false;
    // Image, audio and file parts are billed as input at each model's own figures (CONTRACT §7).
    const prompt = textTokens + mediaPartTokens(parts, model.partTokens, model.contextLength);
    if (prompt > promptTokens) promptTokens = prompt;
    const usage = tokenUsage(prompt, completionTokens, undefined, parts.images);
    const list = costOf(usage, p);
    // Rounded as the charge will be (settlement.ts).
    const charged = chargedCost(usage, p, list, input.pluginCharges, byok ? input.byokFeeFraction : undefined);
    if (charged > credits) credits = charged;
    // The tokens alone: the same sum, unless the request fee, images or plugins are in it.
    const tokensOnly =
      p.request === 0n && (p.image === 0n || parts.images === 0) && input.pluginCharges === 0n
        ? charged
        : tokenCost(prompt, completionTokens, p, byok ? input.byokFeeFraction : undefined);
    if (tokensOnly > tokenCredits) tokenCredits = tokensOnly;
    const forKey = byok ? charged + list : charged;
    if (forKey > keyWithByok) keyWithByok = forKey;
  }
  return { credits, tokenCredits, keyWithByok, tokenComponent, allByok, promptTokens, exact };
}

/** What `prompt` and `completion` tokens cost at `p`'s token prices, rounded as a charge is. */
function tokenCost(prompt: number, completion: number, p: Pricing, byokFeeFraction: number | undefined): Nano {
  const usage = tokenUsage(prompt, completion);
  const tokenPrices: Pricing = { prompt: p.prompt, completion: p.completion, request: 0n, image: 0n };
  return chargedCost(usage, tokenPrices, costOf(usage, tokenPrices), 0n, byokFeeFraction);
}
