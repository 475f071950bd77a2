import { api } from './api.js';
import { ms } from './format.js';
import { RemedyBox } from './remedy.js';
import { useLoad } from './use-load.js';

interface Health {
  window_seconds: number;
  data: Array<{
    provider: string;
    ok: number;
    failures: Record<string, number>;
    error_rate: number | null;
    latency_ms: { mean: number | null; max: number | null; ttft_mean: number | null };
  }>;
  cooldowns: Array<{ provider: string; model: string; remaining_ms: number; provider_code: string | null }>;
}

/** Providers' recent health as this gateway process saw it: error rate, latency, cooldowns. */
export function ProvidersPanel() {
  const health = useLoad(() => api<Health>('/api/v1/admin/providers'), []);
  if (!health.data) return <RemedyBox error={health.error} />;
  const h = health.data;
  return (
    <section class="card">
      <h2>Providers</h2>
      <p class="note">
        The last {h.window_seconds / 60} minutes, as this gateway process saw them (each process keeps its own).{' '}
        <button type="button" onClick={health.reload}>
          Refresh
        </button>
      </p>
      <table class="table" data-testid="providers">
        <thead>
          <tr>
            <th>Provider</th>
            <th class="num">Answered</th>
            <th class="num">Failed</th>
            <th class="num">Error rate</th>
            <th class="num">Mean latency</th>
            <th class="num">Worst latency</th>
            <th class="num">First token</th>
          </tr>
        </thead>
        <tbody>
          {h.data.map((p) => {
            const failed = Object.entries(p.failures);
            return (
              <tr key={p.provider} data-provider={p.provider}>
                <td>{p.provider}</td>
                <td class="num" data-field="ok">
                  {p.ok}
                </td>
                <td class="num">{failed.length === 0 ? 0 : failed.map(([k, n]) => `${n} ${k}`).join(', ')}</td>
                <td class="num" data-field="error-rate">
                  {p.error_rate === null ? '—' : `${(p.error_rate * 100).toFixed(1)} %`}
                </td>
                <td class="num">{ms(p.latency_ms.mean)}</td>
                <td class="num">{ms(p.latency_ms.max)}</td>
                <td class="num">{ms(p.latency_ms.ttft_mean)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h3>Cooldowns</h3>
      {h.cooldowns.length === 0 ? (
        <p class="empty">No endpoint is cooling down.</p>
      ) : (
        <ul>
          {h.cooldowns.map((c, i) => (
            <li key={i}>
              {c.provider} / {c.model}: {Math.ceil(c.remaining_ms / 1000)} s more{c.provider_code ? ` (${c.provider_code})` : ''}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
