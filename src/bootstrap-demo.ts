import type { Gateway } from './main.js';

const DEMO_SETTING = 'demo_account_id';
/** '1' from the start of the demo account's setup until its key was printed (a folder set up before it existed has none: its setup was over). */
const DEMO_PENDING = 'demo_account_pending';
const DEMO_CREDITS = 10;

/**
 * On a fresh data folder started with the embedded defaults: a demo account with credits and a
 * ready API key, printed once with the admin token and a curl line to paste.
 */
export async function bootstrapDemo(gw: Gateway, print: (line: string) => void): Promise<void> {
  const existing = await gw.ledger.getSetting(DEMO_SETTING);
  const base = gw.url ?? `http://${gw.config.listen.host}:${gw.config.listen.port}`;
  if (existing && (await gw.ledger.getSetting(DEMO_PENDING)) !== '1') {
    print(`demo account: ${existing} (its key was printed on first start; make another with: node dist/cli.js keys create ${existing})`);
    // A token is generated on the start that finds none (TOLLGATE_ADMIN_TOKEN set before, unset now):
    // the one that worked before no longer does, so this one is shown.
    if (gw.generatedAdminToken) print(`admin token (shown once): ${gw.adminToken}`);
    return;
  }
  // Each step is kept as it is made, so that a setup cut short (the database locked by another
  // process, the gateway stopped) is finished by the next start rather than begun again: the account
  // is named in the settings at once (a second demo account is never made), its credits are added
  // once, and a key is made (again, if a key made before was never printed) until one was printed.
  let accountId = existing;
  if (!accountId) {
    await gw.ledger.setSetting(DEMO_PENDING, '1');
    accountId = (await gw.admin.createAccount({ name: 'demo', type: 'prepaid' })).id;
    await gw.ledger.setSetting(DEMO_SETTING, accountId);
  }
  if ((await gw.admin.getAccount(accountId)).total_purchased === 0) await gw.admin.addCredits(accountId, { amount: DEMO_CREDITS, kind: 'purchase' });
  const { key } = await gw.admin.createKey(accountId, { name: 'demo' });
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
  await gw.ledger.setSetting(DEMO_PENDING, '0');
}
