import { useState } from 'preact/hooks';
import { api, qs } from './api.js';
import { AccountDetail } from './account-detail.js';
import { credits, yesNo } from './format.js';
import { ProvidersPanel } from './providers-panel.js';
import { WebhooksPanel } from './webhooks-panel.js';
import { RemedyBox } from './remedy.js';
import { SpendChart } from './spend-chart.js';
import { useLoad } from './use-load.js';
import type { Account } from './views.js';

type Tab = 'accounts' | 'spend' | 'providers' | 'webhooks';

interface SpendRow {
  start: string;
  account?: string;
  cost: number;
  requests: number;
}

function CreateAccount({ onCreated }: { onCreated: (id: string) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState('prepaid');
  const [exempt, setExempt] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const made = await api<{ data: Account }>('/api/v1/admin/accounts', { body: { name, type, free_model_limits_exempt: exempt } });
      setName('');
      onCreated(made.data.id);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="create-account">
      <label class="grow">
        New account
        <input name="account-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required placeholder="name" />
      </label>
      <label>
        Type
        <select name="account-type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {['prepaid', 'enterprise', 'subscription', 'invoice'].map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <label class="check">
        <input type="checkbox" name="account-exempt" checked={exempt} onChange={(e) => setExempt(e.currentTarget.checked)} />
        exempt from free-model limits
      </label>
      <button type="submit">Create account</button>
      <RemedyBox error={error} />
    </form>
  );
}

function Accounts({ open }: { open: (id: string) => void }) {
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(
    () => api<{ data: Account[]; total: number; limit: number }>(`/api/v1/admin/accounts${qs({ search, offset, limit: 50 })}`),
    [search, offset],
  );
  return (
    <section class="card">
      <h2>Accounts</h2>
      <CreateAccount onCreated={open} />
      <label class="search">
        Search by name
        <input name="search" type="search" value={search} onInput={(e) => (setSearch(e.currentTarget.value), setOffset(0))} />
      </label>
      <RemedyBox error={list.error} />
      {list.data && (
        <>
          <table class="table" data-testid="accounts">
            <thead>
              <tr>
                <th>Name</th>
                <th>Type</th>
                <th class="num">Balance</th>
                <th class="num">Purchased</th>
                <th class="num">Usage</th>
                <th>Free-model exempt</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((a) => (
                <tr key={a.id} data-account={a.id}>
                  <td>
                    <button type="button" class="link" onClick={() => open(a.id)}>
                      {a.name}
                    </button>
                  </td>
                  <td>{a.type}</td>
                  <td class="num" data-field="balance">
                    {credits(a.balance)}
                  </td>
                  <td class="num">{credits(a.total_purchased)}</td>
                  <td class="num">{credits(a.total_usage)}</td>
                  <td>{yesNo(a.free_model_limits_exempt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="pager">
            {list.data.total} accounts.{' '}
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 50))}>
              Previous
            </button>{' '}
            <button type="button" disabled={offset + 50 >= list.data.total} onClick={() => setOffset(offset + 50)}>
              Next
            </button>
          </p>
        </>
      )}
    </section>
  );
}

function Spend() {
  const report = useLoad(() => api<{ data: SpendRow[]; from: string; to: string }>('/api/v1/admin/reports/spend?by=account&bucket=day'), []);
  const names = useLoad(async () => new Map((await api<{ data: Account[] }>('/api/v1/admin/accounts?limit=200')).data.map((a) => [a.id, a.name])), []);
  if (!report.data) return <RemedyBox error={report.error} />;
  const name = (id: string | undefined) => names.data?.get(id ?? '') ?? id ?? '';
  const last = new Date(Date.parse(report.data.to) - 1).toISOString().slice(0, 10);
  return (
    <section class="card">
      <h2>Spend across accounts</h2>
      <SpendChart
        label="Spend by day and account"
        from={report.data.from.slice(0, 10)}
        to={last}
        points={report.data.data.map((r) => ({ date: r.start.slice(0, 10), series: name(r.account), usage: r.cost }))}
      />
    </section>
  );
}

/** What the operator (admin token) sees: accounts, credits, keys, BYOK keys, spend, providers' health. */
export function Operator() {
  const [tab, setTab] = useState<Tab>('accounts');
  const [account, setAccount] = useState<string | undefined>();
  const tabs: Array<[Tab, string]> = [
    ['accounts', 'Accounts'],
    ['spend', 'Spend'],
    ['providers', 'Providers'],
    ['webhooks', 'Alerts'],
  ];
  return (
    <>
      <nav class="tabs">
        {tabs.map(([id, label]) => (
          <button type="button" key={id} class={tab === id ? 'tab active' : 'tab'} data-tab={id} onClick={() => (setTab(id), setAccount(undefined))}>
            {label}
          </button>
        ))}
      </nav>
      {tab === 'accounts' && (account ? <AccountDetail id={account} back={() => setAccount(undefined)} /> : <Accounts open={setAccount} />)}
      {tab === 'spend' && <Spend />}
      {tab === 'providers' && <ProvidersPanel />}
      {tab === 'webhooks' && <WebhooksPanel />}
    </>
  );
}
