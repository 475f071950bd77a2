import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { RemedyBox } from './remedy.js';
import type { Role, Session } from './session.js';

/** Which role a credential has: tried as the admin token, then a management key, then an API key. */
export async function roleOf(credential: string): Promise<Role> {
  const tries: Array<[Role, string]> = [
    ['admin', '/api/v1/admin/accounts?limit=1'],
    ['management', '/api/v1/keys'],
    ['key', '/api/v1/key'],
  ];
  let last: unknown;
  for (const [role, path] of tries) {
    try {
      await api(path, { credential });
      return role;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) throw err;
      last = err;
    }
  }
  throw last;
}

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [credential, setCredential] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const value = credential.trim();
    if (!value) return;
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn({ credential: value, role: await roleOf(value) });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card sign-in">
      <h2>Sign in</h2>
      <p class="note">
        An API key shows its limits, usage and generations; a management key manages its account's keys; the admin token runs the gateway. It is kept in this
        tab only (session storage) and sent only to this gateway.
      </p>
      <form class="inline-form" onSubmit={submit}>
        <label class="grow">
          API key, management key or admin token
          <input name="credential" type="password" autoComplete="off" value={credential} onInput={(e) => setCredential(e.currentTarget.value)} required />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <RemedyBox error={error} />
    </section>
  );
}
