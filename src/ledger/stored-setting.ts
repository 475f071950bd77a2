import { existsSync } from 'node:fs';
import { openDatabase } from './database.js';

/** No settings table (SQLite: no such table; PostgreSQL: undefined_table): a ledger never started. */
function isNeverStarted(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e.code === '42P01' || (e.code === 'SQLITE_ERROR' && /no such table/.test(e.message ?? ''));
}

/**
 * A setting the gateway stored in the ledger (the generated admin token), read without writing
 * anything: no migration, no file created. Undefined when the ledger holds none, or was never started.
 */
export async function readStoredSetting(databaseUrl: string, name: string): Promise<string | undefined> {
  if (databaseUrl.startsWith('sqlite:')) {
    const path = databaseUrl.slice('sqlite:'.length);
    if (path === ':memory:' || path === '' || !existsSync(path)) return undefined;
  }
  const db = openDatabase(databaseUrl, { readOnly: true });
  try {
    const row = await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst();
    return row?.value;
  } catch (err) {
    if (isNeverStarted(err)) return undefined;
    throw err;
  } finally {
    await db.destroy();
  }
}
