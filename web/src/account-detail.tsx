import { useState } from 'preact/hooks';
import { api, decimal, qs } from './api.js';
import { credits, utc, yesNo } from './format.js';
import { GenerationsTable } from './generations-table.js';
import { type KeyActions, KeysPanel } from './keys-panel.js';
import { RemedyBox } from './remedy.js';
import { SpendChart } from './spend-chart.js';
import { useLoad } from './use-load.js';
import type { Account, GenerationItem, KeyRow } from './views.js';

const enc = encodeURIComponent;

function adminKeyActions(accountId: string): KeyActions {
  return {
    list: async () => (await api<{ data: KeyRow[] }>(`/api/v1/admin/accounts/${enc(accountId)}/keys`)).data,
    create: (body) => api(`/api/v1/admin/accounts/${enc(accountId)}/keys`, { body }),
    update: (hash, body) => api(`/api/v1/admin/keys/${enc(hash)}`, { method: 'PATCH', body }),
    rotate: (hash) => api(`/api/v1/admin/keys/${enc(hash)}/rotate`, { body: {} }),
    remove: (hash) => api(`/api/v1/admin/keys/${enc(hash)}`, { method: 'DELETE' }),
    canMakeManagementKeys: true,
  };
}

function CreditsForm({ id, onDone }: { id: string; onDone: () => void }) {
  const [amount, setAmount] = useState('');
  const [kind, setKind] = useState('purchase');
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api(`/api/v1/admin/accounts/${enc(id)}/credits`, { body: { amount: decimal(amount), kind } });
      setAmount('');
    } catch (err) {
      setError(err);
    }
    onDone();
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="credits-form">
      <label>
        Amount
        <input name="amount" inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} required />
      </label>
      <label>
        Kind
        <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
          <option value="purchase">top up (purchase)</option>
          <option value="adjustment">adjustment (either sign)</option>
        </select>
      </label>
      <button type="submit">Add credits</button>
      <RemedyBox error={error} />
    </form>
  );
}

function Byok({ id }: { id: string }) {
  const list = useLoad(() => api<{ data: Array<{ provider: string; stored: boolean }> }>(`/api/v1/admin/accounts/${enc(id)}/byok`), [id]);
  const [provider, setProvider] = useState('');
  const [secret, setSecret] = useState('');
  const [error, setError] = useState<unknown>();
  const run = async (work: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError(err);
    }
    list.reload();
  };
  const providers = list.data?.data ?? [];
  return (
    <section class="card">
      <h2>BYOK keys</h2>
      <RemedyBox error={error ?? list.error} />
      <ul class="byok" data-testid="byok">
        {providers.map((p) => (
          <li key={p.provider} data-provider={p.provider}>
            {p.provider}: {p.stored ? 'own key stored' : 'platform key'}{' '}
            {p.stored && (
              <button type="button" onClick={() => run(() => api(`/api/v1/admin/accounts/${enc(id)}/byok/${enc(p.provider)}`, { method: 'DELETE' }))}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          const chosen = provider || providers[0]?.provider || '';
          void run(() => api(`/api/v1/admin/accounts/${enc(id)}/byok/${enc(chosen)}`, { method: 'PUT', body: { api_key: secret } })).then(() => setSecret(''));
        }}
      >
        <label>
          Provider
          <select name="byok-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            {providers.map((p) => (
              <option key={p.provider} value={p.provider}>
                {p.provider}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          The account's own provider key
          <input name="byok-key" type="password" autoComplete="off" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} required />
        </label>
        <button type="submit">Store</button>
      </form>
    </section>
  );
}

/** One account for the operator: its money, credits, keys, BYOK keys, spend and generations. */
export function AccountDetail({ id, back }: { id: string; back: () => void }) {
  const account = useLoad(() => api<{ data: Account }>(`/api/v1/admin/accounts/${enc(id)}`), [id]);
  const actions = adminKeyActions(id);
  const keys = useLoad(actions.list, [id]);
  const spend = useLoad(
    () =>
      api<{ data: Array<{ start: string; model?: string; cost: number }>; from: string; to: string }>(
        `/api/v1/admin/reports/spend${qs({ account: id, by: 'model' })}`,
      ),
    [id],
  );
  const generations = useLoad(() => api<{ data: GenerationItem[] }>(`/api/v1/admin/accounts/${enc(id)}/generations?limit=20`), [id]);
  const refresh = () => {
    account.reload();
    keys.reload();
    spend.reload();
    generations.reload();
  };
  const a = account.data?.data;
  const names = new Map((keys.data ?? []).map((k) => [k.hash, k.name]));
  return (
    <>
      <p>
        <button type="button" class="link" onClick={back}>
          ← All accounts
        </button>{' '}
        <button type="button" data-action="refresh" onClick={refresh}>
          Refresh
        </button>
      </p>
      <RemedyBox error={account.error} />
      {a && (
        <section class="card">
          <h2 data-testid="account-name">{a.name}</h2>
          <div class="stats">
            <div class="stat">
              <div class="stat-label">Balance</div>
              <div class="stat-value" data-testid="account-balance">
                {credits(a.balance)}
              </div>
            </div>
            <div class="stat">
              <div class="stat-label">Purchased</div>
              <div class="stat-value" data-testid="account-purchased">
                {credits(a.total_purchased)}
              </div>
            </div>
            <div class="stat">
              <div class="stat-label">Usage</div>
              <div class="stat-value">{credits(a.total_usage)}</div>
            </div>
            <div class="stat">
              <div class="stat-label">Type</div>
              <div class="stat-value">{a.type}</div>
              <div class="stat-note">free-model limits exempt: {yesNo(a.free_model_limits_exempt)}</div>
            </div>
          </div>
          <p class="note">
            Created {utc(a.created_at)}; id <span class="mono">{a.id}</span>
          </p>
          <CreditsForm id={id} onDone={refresh} />
        </section>
      )}
      {keys.data && <KeysPanel rows={keys.data} actions={actions} onChange={refresh} />}
      <Byok id={id} />
      <section class="card">
        <h2>Spend</h2>
        {spend.data && (
          <SpendChart
            label="Spend by day and model"
            from={spend.data.from.slice(0, 10)}
            to={new Date(Date.parse(spend.data.to) - 1).toISOString().slice(0, 10)}
            points={spend.data.data.map((r) => ({ date: r.start.slice(0, 10), series: r.model ?? '', usage: r.cost }))}
          />
        )}
      </section>
      <section class="card">
        <h2>Latest generations</h2>
        {generations.data && <GenerationsTable rows={generations.data.data} keyNames={names} />}
      </section>
    </>
  );
}
