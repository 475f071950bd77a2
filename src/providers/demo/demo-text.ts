import { contentText } from '../../tokenizer/count-tokens.js';

const INTRO = 'Hello from the Tollgate demo model. This answer is generated locally, costs credits like any paid model, and streams one token at a time.';

/** The demo model's answer to a conversation: deterministic, split into tokens (words with their space). */
export function demoTokens(messages: readonly unknown[], maxTokens: number | undefined): string[] {
  const lastUser = [...messages].reverse().find((m) => (m as { role?: unknown } | null)?.role === 'user');
  const said = contentText((lastUser as { content?: unknown } | undefined)?.content)
    .trim()
    .slice(0, 400);
  const text = said ? `${INTRO} You said: ${said}` : INTRO;
  const words = text.split(/(?<=\s)/);
  return maxTokens === undefined ? words : words.slice(0, Math.max(0, maxTokens));
}
