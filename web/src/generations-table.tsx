import { credits, ms, utc, yesNo } from './format.js';
import type { GenerationItem } from './views.js';

const statusOf = (g: GenerationItem) => (g.cancelled ? 'cancelled' : g.finish_reason === 'error' ? 'error' : (g.finish_reason ?? 'completed'));

/** The latest generations: model, provider, tokens, cost, latency, status, streamed, cancelled. */
export function GenerationsTable({ rows, keyNames }: { rows: GenerationItem[]; keyNames?: Map<string, string> }) {
  if (rows.length === 0) return <p class="empty">No generations yet.</p>;
  return (
    <table class="table" data-testid="generations">
      <thead>
        <tr>
          <th>When</th>
          {keyNames && <th>Key</th>}
          <th>Model</th>
          <th>Provider</th>
          <th class="num">Prompt</th>
          <th class="num">Completion</th>
          <th class="num">Cost</th>
          <th class="num">Latency</th>
          <th>Status</th>
          <th>Streamed</th>
          <th>Cancelled</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((g) => (
          <tr key={g.id} data-generation={g.id}>
            <td>{utc(g.created_at)}</td>
            {keyNames && <td>{keyNames.get(g.key_hash ?? '') ?? g.key_hash ?? '—'}</td>}
            <td>{g.model}</td>
            <td>{g.provider_name ?? g.provider ?? '—'}</td>
            <td class="num">{g.tokens_prompt}</td>
            <td class="num">{g.tokens_completion}</td>
            <td class="num" data-field="cost">
              {credits(g.total_cost)}
            </td>
            <td class="num">{ms(g.latency ?? g.latency_ms)}</td>
            <td>{statusOf(g)}</td>
            <td>{yesNo(g.streamed)}</td>
            <td>{yesNo(g.cancelled)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
