import type { Gateway } from './main.js';

const DEMO_SETTING = 'demo_account_id';
/**
 * While the demo account's setup is under way, the time its account is made at (ms); DONE once its
 * key is made, just before it is printed. A folder set up before it existed has none: its setup was over.
 */
const DEMO_PENDING = 'demo_account_pending';
const DONE = 'done';
const DEMO_NAME = 'demo';
const DEMO_CREDITS = 10;

/**
 * On a fresh data folder started with the embedded defaults: a demo account with credits and a
 * ready API key, printed once with the admin token and a curl line to paste.
 */
export async function bootstrapDemo(gw: Gateway, print: (line: string) => void): Promise<void> {
  const existing = await gw.ledger.getSetting(DEMO_SETTING);
  const base = gw.url ?? `http://${gw.config.listen.host}:${gw.config.listen.port}`;
  const pending = await gw.ledger.getSetting(DEMO_PENDING);
  if (existing && (pending === undefined || pending === DONE)) {
    print(`demo account: ${existing} (its key was printed on first start; make another with: node dist/cli.js keys create ${existing})`);
    // A token is generated on the start that finds none (TOLLGATE_ADMIN_TOKEN set before, unset now):
    // the one that worked before no longer does, so this one is shown.
    if (gw.generatedAdminToken) print(`admin token (shown once): ${gw.adminToken}`);
    return;
  }
  // Each step is kept as it is made, so that a setup cut short (the database locked by another
  // process, the gateway stopped) is finished by the next start rather than begun again. Before the
  // account is made, the time it is made at is stored (demo_account_pending): a start that finds that
  // time and no account id takes the demo account made at it (the write of its id was cut short), so
  // a second one is never made. Its credits are added once. The setup is marked over before the key
  // is printed, so that a key is never printed twice; keys a cut-short start made were never shown,
  // and are deleted before the one printed is made.
  let accountId = existing ?? (await madeBefore(gw, pending));
  if (!accountId) {
    const createdAt = Date.now();
    await gw.ledger.setSetting(DEMO_PENDING, String(createdAt));
    accountId = (await gw.admin.createAccount({ name: DEMO_NAME, type: 'prepaid', created_at: new Date(createdAt).toISOString() })).id;
  }
  if (!existing) await gw.ledger.setSetting(DEMO_SETTING, accountId);
  if ((await gw.admin.getAccount(accountId)).total_purchased === 0) await gw.admin.addCredits(accountId, { amount: DEMO_CREDITS, kind: 'purchase' });
  for (const unseen of await gw.admin.listKeys(accountId)) await gw.admin.deleteKey(unseen.hash);
  const { key } = await gw.admin.createKey(accountId, { name: DEMO_NAME });
  await gw.ledger.setSetting(DEMO_PENDING, DONE);
  const model = gw.config.models.find((m) => !m.id.endsWith(gw.config.limits.free_models.suffix))?.id ?? gw.config.models[0]?.id;
  print('');
  print(`demo account ${accountId} created with ${DEMO_CREDITS} credits.`);
  print(`  API key (shown once): ${key}`);
  if (gw.generatedAdminToken) print(`  admin token (shown once): ${gw.adminToken}`);
  print('try:');
  print(
    `  curl -s ${base}/api/v1/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" -d '{"model":"${model}","messages":[{"role":"user","content":"Hello"}]}'`,
  );
  print(`  curl -s ${base}/api/v1/key -H "Authorization: Bearer ${key}"`);
  print(`  or open ${base}/ and sign in with the API key (or the admin token)`);
  print('');
}

/** The demo account a cut-short start made, if it made one before it could store its id: named so, made at the stored time. */
async function madeBefore(gw: Gateway, pending: string | undefined): Promise<string | undefined> {
  if (pending === undefined || pending === DONE) return undefined;
  const at = Number(pending);
  const { accounts } = await gw.ledger.listAccounts({ search: DEMO_NAME, offset: 0, limit: 100 });
  return accounts.find((a) => a.name === DEMO_NAME && a.createdAt === at)?.id;
}
