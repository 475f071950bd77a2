import { useState } from 'preact/hooks';
import { credits, nextReset, utc } from './format.js';
import { decimal } from './api.js';
import { RemedyBox } from './remedy.js';
import type { KeyRow } from './views.js';

/** Where a keys panel sends its work: the management API (/api/v1/keys) or the admin API. */
export interface KeyActions {
  list(): Promise<KeyRow[]>;
  create(body: Record<string, unknown>): Promise<{ key: string; data: KeyRow }>;
  update(hash: string, body: Record<string, unknown>): Promise<unknown>;
  rotate(hash: string): Promise<{ key: string; data: KeyRow }>;
  remove(hash: string): Promise<unknown>;
  /** The operator may make management keys. */
  canMakeManagementKeys: boolean;
}

/** A secret shown once, right after it was made. */
function NewSecret({ secret, what, onClose }: { secret: string; what: string; onClose: () => void }) {
  return (
    <div class="secret" data-testid="new-secret">
      <p>
        {what}: copy it now, it is shown only once.{' '}
        <code class="mono" data-testid="new-secret-value">
          {secret}
        </code>
      </p>
      <button type="button" onClick={onClose}>
        Done
      </button>
    </div>
  );
}

/** Every key of an account: limit, reset, remaining and usage; create, rotate, disable and delete. */
export function KeysPanel({ rows, actions, onChange }: { rows: KeyRow[]; actions: KeyActions; onChange: () => void }) {
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [reset, setReset] = useState('');
  const [management, setManagement] = useState(false);
  const [secret, setSecret] = useState<{ value: string; what: string } | undefined>();
  const [error, setError] = useState<unknown>();
  const [confirming, setConfirming] = useState<string | undefined>();
  const run = async (work: () => Promise<void>) => {
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError(err);
    }
    onChange();
  };
  const create = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const body: Record<string, unknown> = { name: name || 'key' };
      if (limit !== '') body.limit = decimal(limit);
      if (reset) body.limit_reset = reset;
      if (management) body.management = true;
      const made = await actions.create(body);
      setSecret({ value: made.key, what: `New key "${made.data.name}"` });
      setName('');
      setLimit('');
      setReset('');
      setManagement(false);
    });
  };
  return (
    <section class="card">
      <h2>Keys</h2>
      {secret && <NewSecret secret={secret.value} what={secret.what} onClose={() => setSecret(undefined)} />}
      <RemedyBox error={error} />
      <table class="table" data-testid="keys">
        <thead>
          <tr>
            <th>Name</th>
            <th>Label</th>
            <th class="num">Limit</th>
            <th>Reset</th>
            <th class="num">Remaining</th>
            <th class="num">Today</th>
            <th class="num">Week</th>
            <th class="num">Month</th>
            <th>State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((k) => {
            const next = nextReset(k.limit_reset);
            return (
              <tr key={k.hash} data-key={k.hash}>
                <td>
                  {k.name}
                  {k.management ? ' (management)' : ''}
                </td>
                <td class="mono">{k.label}</td>
                <td class="num" data-field="limit">
                  {k.limit === null ? '—' : credits(k.limit)}
                </td>
                <td>{k.limit_reset ? `${k.limit_reset}${next ? `, next ${utc(next)}` : ''}` : 'never'}</td>
                <td class="num" data-field="remaining">
                  {k.limit_remaining === null ? '—' : credits(k.limit_remaining)}
                </td>
                <td class="num" data-field="usage-daily">
                  {credits(k.usage_daily)}
                </td>
                <td class="num" data-field="usage-weekly">
                  {credits(k.usage_weekly)}
                </td>
                <td class="num" data-field="usage-monthly">
                  {credits(k.usage_monthly)}
                </td>
                <td data-field="state">{k.disabled ? 'disabled' : 'enabled'}</td>
                <td class="actions">
                  <button
                    type="button"
                    data-action="rotate"
                    onClick={() => run(async () => setSecret({ value: (await actions.rotate(k.hash)).key, what: `New secret for "${k.name}"` }))}
                  >
                    Rotate
                  </button>
                  <button type="button" data-action="toggle" onClick={() => run(async () => void (await actions.update(k.hash, { disabled: !k.disabled })))}>
                    {k.disabled ? 'Enable' : 'Disable'}
                  </button>
                  {confirming === k.hash ? (
                    <button type="button" class="danger" data-action="confirm-delete" onClick={() => run(async () => void (await actions.remove(k.hash)))}>
                      Really delete
                    </button>
                  ) : (
                    <button type="button" data-action="delete" onClick={() => setConfirming(k.hash)}>
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <form class="inline-form" onSubmit={create} data-testid="create-key">
        <label>
          Name
          <input name="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        </label>
        <label>
          Limit (credits)
          <input name="key-limit" inputMode="decimal" value={limit} onInput={(e) => setLimit(e.currentTarget.value)} placeholder="none" />
        </label>
        <label>
          Reset
          <select name="key-reset" value={reset} onChange={(e) => setReset(e.currentTarget.value)}>
            <option value="">never</option>
            <option value="daily">daily</option>
            <option value="weekly">weekly</option>
            <option value="monthly">monthly</option>
          </select>
        </label>
        {actions.canMakeManagementKeys && (
          <label class="check">
            <input type="checkbox" name="key-management" checked={management} onChange={(e) => setManagement(e.currentTarget.checked)} />
            management key
          </label>
        )}
        <button type="submit">Create key</button>
      </form>
    </section>
  );
}
