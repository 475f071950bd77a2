import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { callTimeout } from '../call-timeout.js';
import { contentText } from '../tokenizer/count-tokens.js';
import type { CancelSignal } from '../cancellation.js';

const answerSchema = z.object({
  results: z.array(z.object({ title: z.string().default(''), url: z.string().default(''), text: z.string().default('') })),
});
export type SearchResult = z.output<typeof answerSchema>['results'][number];

export interface WebSearchOptions {
  searchUrl: string;
  maxResults: number;
  timeoutMs: number;
  dispatcher: Dispatcher;
}

/**
 * The `web` plugin: searches a configured endpoint (GET ?q=…&n=… answering {results: [{title, url,
 * text}]}) and injects the results into the prompt. It is a paid plugin: its price is charged per
 * request that used it.
 */
export class WebSearch {
  constructor(private readonly options: WebSearchOptions) {}

  /** The results for the conversation's last user message; throws when the search endpoint fails. */
  async search(messages: readonly unknown[], signal: CancelSignal): Promise<SearchResult[]> {
    const query = lastUserText(messages).slice(0, 500);
    if (!query) return [];
    const url = new URL(this.options.searchUrl);
    url.searchParams.set('q', query);
    url.searchParams.set('n', String(this.options.maxResults));
    // Held for the whole search (answer read included) and cleared at its end.
    const timeout = callTimeout(signal, this.options.timeoutMs);
    try {
      const res = await request(url, { method: 'GET', dispatcher: this.options.dispatcher, signal: timeout.signal });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`web search answered HTTP ${res.statusCode}`);
      }
      const parsed = answerSchema.safeParse(await res.body.json());
      if (!parsed.success) throw new Error('web search answer is not {results: [...]}');
      return parsed.data.results.slice(0, this.options.maxResults);
    } finally {
      timeout.clear();
    }
  }
}

function lastUserText(messages: readonly unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null;
    if (m?.role === 'user') return contentText(m.content).trim();
  }
  return '';
}

/** How much of each result goes into the prompt, in characters. */
const LIMITS = { title: 200, url: 500, text: 2000 };
const HEADER = 'Web search results (cite them by number where you use them):\n\n';

/**
 * A bound on the prompt tokens the results can add (every token is at least one UTF-8 byte, every
 * character at most four), so that a request's hold covers them before the search runs.
 */
export function searchResultsTokenBound(maxResults: number): number {
  return HEADER.length + 3 + maxResults * (4 * (LIMITS.title + LIMITS.url + LIMITS.text) + 16);
}

/** The messages with the search results (each cut to its limits) put in front as a system message. */
export function withSearchResults(messages: readonly unknown[], results: readonly SearchResult[]): unknown[] {
  if (results.length === 0) return [...messages];
  const lines = results.map((r, i) => `[${i + 1}] ${r.title.slice(0, LIMITS.title)} (${r.url.slice(0, LIMITS.url)})\n${r.text.slice(0, LIMITS.text)}`);
  const system = {
    role: 'system',
    content: `${HEADER}${lines.join('\n\n')}`,
  };
  return [system, ...messages];
}
