import { useState } from 'preact/hooks';
import { api } from './api.js';
import { credits } from './format.js';
import { RemedyBox } from './remedy.js';
import type { Model } from './views.js';

interface Answer {
  id: string;
  model: string;
  provider: string;
  choices: Array<{ message?: { content?: string | null } }>;
  usage: { prompt_tokens: number; completion_tokens: number; cost: number };
}

/** Sends one chat completion with the signed-in key: its answer and cost, or the remedy of a 402/429. */
export function TryRequest({ models, onDone }: { models: Model[]; onDone: () => void }) {
  const [model, setModel] = useState(models[0]?.id ?? '');
  const [prompt, setPrompt] = useState('Hello!');
  const [maxTokens, setMaxTokens] = useState('');
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<Answer | undefined>();
  const [error, setError] = useState<unknown>();
  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setAnswer(undefined);
    try {
      const body: Record<string, unknown> = { model, messages: [{ role: 'user', content: prompt }] };
      if (maxTokens) body.max_tokens = Number(maxTokens);
      setAnswer(await api<Answer>('/api/v1/chat/completions', { body }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      onDone();
    }
  };
  return (
    <section class="card">
      <h2>Try a request</h2>
      <form class="inline-form" onSubmit={send}>
        <label>
          Model
          <select value={model} onChange={(e) => setModel(e.currentTarget.value)} name="model">
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Message
          <input name="prompt" value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
        </label>
        <label>
          max_tokens
          <input name="max_tokens" inputMode="numeric" value={maxTokens} onInput={(e) => setMaxTokens(e.currentTarget.value)} placeholder="default" />
        </label>
        <button type="submit" disabled={busy}>
          Send
        </button>
      </form>
      <RemedyBox error={error} />
      {answer && (
        <div class="answer" data-testid="answer">
          <p>{answer.choices[0]?.message?.content ?? ''}</p>
          <p class="note">
            {answer.model} via {answer.provider}: {answer.usage.prompt_tokens} + {answer.usage.completion_tokens} tokens, {credits(answer.usage.cost)} credits
          </p>
        </div>
      )}
    </section>
  );
}
