import { useState } from 'preact/hooks';
import { KeyHolder } from './key-holder.js';
import { Operator } from './operator.js';
import { Owner } from './owner.js';
import { clearSession, loadSession, saveSession, type Session } from './session.js';
import { SignIn } from './sign-in.js';

const ROLE_NAMES = { admin: 'Operator (admin token)', management: 'Account owner (management key)', key: 'Key holder (API key)' } as const;

export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const signIn = (s: Session) => {
    saveSession(s);
    setSession(s);
  };
  const signOut = () => {
    clearSession();
    setSession(undefined);
  };
  return (
    <>
      <header class="top">
        <h1>Tollgate</h1>
        {session && (
          <div class="who">
            <span data-testid="role" data-role={session.role}>
              {ROLE_NAMES[session.role]}
            </span>
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main>
        {!session && <SignIn onSignedIn={signIn} />}
        {session?.role === 'key' && <KeyHolder />}
        {session?.role === 'management' && <Owner />}
        {session?.role === 'admin' && <Operator />}
      </main>
    </>
  );
}
