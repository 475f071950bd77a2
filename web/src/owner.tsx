import { api, qs } from './api.js';
import { credits } from './format.js';
import { GenerationsTable } from './generations-table.js';
import { type KeyActions, KeysPanel } from './keys-panel.js';
import { RemedyBox } from './remedy.js';
import { SpendChart } from './spend-chart.js';
import { useLoad } from './use-load.js';
import { fromNano, nextUtcMidnight, toNano, utc } from './format.js';
import type { Credits, GenerationItem, KeyRow, KeyStatus } from './views.js';

interface ActivityItem {
  date: string;
  model: string;
  provider_name: string;
  usage: number;
  requests: number;
}

/** `GET /api/v1/keys` answers 100 keys a page. */
const KEYS_PAGE = 100;

/** Every key of the account, page by page: an owner manages all of them. */
async function allKeys(): Promise<KeyRow[]> {
  const keys: KeyRow[] = [];
  for (;;) {
    const page = (await api<{ data: KeyRow[] }>(`/api/v1/keys${qs({ include_disabled: true, offset: keys.length })}`)).data;
    keys.push(...page);
    if (page.length < KEYS_PAGE) return keys;
  }
}

const keyActions: KeyActions = {
  list: allKeys,
  create: (body) => api('/api/v1/keys', { body }),
  update: (hash, body) => api(`/api/v1/keys/${encodeURIComponent(hash)}`, { method: 'PATCH', body }),
  rotate: (hash) => api(`/api/v1/keys/${encodeURIComponent(hash)}/rotate`, { body: {} }),
  remove: (hash) => api(`/api/v1/keys/${encodeURIComponent(hash)}`, { method: 'DELETE' }),
  canMakeManagementKeys: false,
};

const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** What an account owner (management key) sees: every key of the account, managed; activity by day, model and key. */
export function Owner() {
  const keys = useLoad(keyActions.list, []);
  const credit = useLoad(() => api<{ data: Credits }>('/api/v1/credits'), []);
  const status = useLoad(() => api<{ data: KeyStatus }>('/api/v1/key'), []);
  const activity = useLoad(() => api<{ data: ActivityItem[] }>('/api/v1/activity'), []);
  const byKey = useLoad(async () => {
    const list = keys.data ?? [];
    const sums = await Promise.all(
      list.map(async (k) => {
        const rows = (await api<{ data: ActivityItem[] }>(`/api/v1/activity${qs({ api_key_hash: k.hash })}`)).data;
        return { key: k, requests: rows.reduce((a, r) => a + r.requests, 0), usage: rows.reduce((a, r) => a + toNano(r.usage), 0n) };
      }),
    );
    return sums;
  }, [keys.data]);
  const generations = useLoad(() => api<{ data: GenerationItem[] }>('/api/v1/generations?limit=20'), []);
  const refresh = () => {
    keys.reload();
    credit.reload();
    activity.reload();
    generations.reload();
  };
  const today = Date.now();
  const free = status.data?.data.free_model_daily_requests;
  return (
    <>
      <RemedyBox error={keys.error ?? credit.error} />
      <section class="card">
        <h2>Account</h2>
        <div class="stats">
          {credit.data && (
            <>
              <div class="stat">
                <div class="stat-label">Balance</div>
                <div class="stat-value" data-testid="credits-balance">
                  {fromNano(toNano(credit.data.data.total_credits) - toNano(credit.data.data.total_usage))}
                </div>
              </div>
              <div class="stat">
                <div class="stat-label">Credits bought</div>
                <div class="stat-value" data-testid="credits-total">
                  {credits(credit.data.data.total_credits)}
                </div>
                <div class="stat-note">{credits(credit.data.data.total_usage)} used</div>
              </div>
            </>
          )}
          {free && (
            <div class="stat">
              <div class="stat-label">Free-model requests today</div>
              <div class="stat-value" data-testid="free-used">{`${free.used} / ${free.limit}`}</div>
              <div class="stat-note">resets {utc(nextUtcMidnight())}</div>
            </div>
          )}
        </div>
      </section>
      {keys.data && <KeysPanel rows={keys.data} actions={keyActions} onChange={refresh} />}
      <section class="card">
        <h2>Activity (last 30 days)</h2>
        {activity.data && (
          <SpendChart
            label="Spend by day and model"
            from={isoDay(today - 29 * DAY)}
            to={isoDay(today)}
            points={activity.data.data.map((r) => ({ date: r.date, series: r.model, usage: r.usage }))}
          />
        )}
        {byKey.data && byKey.data.length > 0 && (
          <table class="table" data-testid="activity-by-key">
            <thead>
              <tr>
                <th>Key</th>
                <th class="num">Requests</th>
                <th class="num">Spend</th>
              </tr>
            </thead>
            <tbody>
              {byKey.data.map((r) => (
                <tr key={r.key.hash}>
                  <td>{r.key.name}</td>
                  <td class="num">{r.requests}</td>
                  <td class="num">{fromNano(r.usage)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section class="card">
        <h2>Latest generations</h2>
        {generations.data && <GenerationsTable rows={generations.data.data} />}
      </section>
    </>
  );
}
