import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { utc } from './format.js';
import { RemedyBox } from './remedy.js';
import { useLoad } from './use-load.js';

interface Webhook {
  id: string;
  url: string;
  events: string[];
  pending: number;
  delivered: number;
  failed: number;
  dropped: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  last_failure: string | null;
}

interface TestResult {
  id: string;
  event_id: string;
  delivered: boolean;
  status: number | null;
  error: string | null;
}

/** The alert webhooks (config `alerts.webhooks`), their deliveries in this process, and a test event for each. */
export function WebhooksPanel() {
  const hooks = useLoad(() => api<{ data: Webhook[] }>('/api/v1/admin/webhooks'), []);
  const [results, setResults] = useState<Record<string, TestResult | string>>({});
  if (!hooks.data) return <RemedyBox error={hooks.error} />;
  const send = async (id: string) => {
    try {
      const { data } = await api<{ data: TestResult }>(`/api/v1/admin/webhooks/${encodeURIComponent(id)}/test`, { method: 'POST', body: {} });
      setResults((r) => ({ ...r, [id]: data }));
    } catch (err) {
      setResults((r) => ({ ...r, [id]: err instanceof ApiError ? err.message : 'the test could not be sent' }));
    }
    hooks.reload();
  };
  return (
    <section class="card">
      <h2>Alert webhooks</h2>
      <p class="note">
        Sent when a key crosses 80% and 100% of its limit, when a balance falls below the threshold, and when a provider is put on cooldown; signed with each
        webhook's secret. Delivery counts are this gateway process's.{' '}
        <button type="button" onClick={hooks.reload}>
          Refresh
        </button>
      </p>
      {hooks.data.data.length === 0 ? (
        <p class="empty">No webhook is configured (config: alerts.webhooks).</p>
      ) : (
        <table class="table" data-testid="webhooks">
          <thead>
            <tr>
              <th>Id</th>
              <th>URL</th>
              <th>Events</th>
              <th class="num">Delivered</th>
              <th class="num">Pending</th>
              <th class="num">Failed</th>
              <th>Last failure</th>
              <th>Test</th>
            </tr>
          </thead>
          <tbody>
            {hooks.data.data.map((h) => {
              const result = results[h.id];
              return (
                <tr key={h.id} data-webhook={h.id}>
                  <td>{h.id}</td>
                  <td>{h.url}</td>
                  <td>{h.events.join(', ')}</td>
                  <td class="num" data-field="delivered">
                    {h.delivered}
                  </td>
                  <td class="num">{h.pending}</td>
                  <td class="num">{h.failed + h.dropped}</td>
                  <td>{h.last_failure ? `${h.last_failure} (${utc(h.last_failure_at)})` : '—'}</td>
                  <td>
                    <button type="button" data-action="test-webhook" onClick={() => void send(h.id)}>
                      Send test event
                    </button>
                    {result !== undefined && (
                      <span class="note" data-field="test-result">
                        {' '}
                        {typeof result === 'string'
                          ? result
                          : result.delivered
                            ? `delivered (HTTP ${result.status ?? '?'})`
                            : `not delivered: ${result.error ?? `HTTP ${result.status ?? '?'}`}`}
                      </span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
