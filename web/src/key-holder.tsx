import { api } from './api.js';
import { GenerationsTable } from './generations-table.js';
import { KeyStatusPanel } from './key-status-panel.js';
import { RemedyBox } from './remedy.js';
import { SpendChart } from './spend-chart.js';
import { TryRequest } from './try-request.js';
import { useLoad } from './use-load.js';
import type { Credits, GenerationItem, KeyActivityRow, KeyStatus, Model } from './views.js';

/** What an API key's holder sees: the key's limits and usage, credits, spend over time, latest generations. */
export function KeyHolder() {
  const status = useLoad(() => api<{ data: KeyStatus }>('/api/v1/key'), []);
  const credit = useLoad(() => api<{ data: Credits }>('/api/v1/credits'), []);
  const activity = useLoad(() => api<{ data: KeyActivityRow[]; from: string; to: string }>('/api/v1/key/activity'), []);
  const generations = useLoad(() => api<{ data: GenerationItem[] }>('/api/v1/generations?limit=20'), []);
  const models = useLoad(() => api<{ data: Model[] }>('/api/v1/models'), []);
  const refresh = () => {
    status.reload();
    credit.reload();
    activity.reload();
    generations.reload();
  };
  return (
    <>
      <RemedyBox error={status.error ?? credit.error} />
      {status.data && <KeyStatusPanel status={status.data.data} credit={credit.data?.data} />}
      <section class="card">
        <h2>Spend over time</h2>
        {activity.data && (
          <SpendChart
            label="Spend by day and model"
            from={activity.data.from}
            to={activity.data.to}
            points={activity.data.data.map((r) => ({ date: r.date, series: r.model, usage: r.usage }))}
          />
        )}
      </section>
      {models.data && <TryRequest models={models.data.data} onDone={refresh} />}
      <section class="card">
        <h2>Latest generations</h2>
        {generations.data && <GenerationsTable rows={generations.data.data} />}
      </section>
    </>
  );
}
