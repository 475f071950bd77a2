/** The credential lives in this tab's session storage only: never a cookie, never the URL. */
const KEY = 'tollgate.credential';

export type Role = 'admin' | 'management' | 'key';

export interface Session {
  credential: string;
  role: Role;
}

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.credential === 'string' && (s.role === 'admin' || s.role === 'management' || s.role === 'key'))
      return { credential: s.credential, role: s.role };
  } catch {
    // Unreadable: signed out.
  }
  return undefined;
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}
