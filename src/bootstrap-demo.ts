import type { Gateway } from './main.js';

const DEMO_SETTING = 'demo_account_id';

/**
 * On a fresh data folder started with the embedded defaults: a demo account with credits and a
 * ready API key, printed once with the admin token and a curl line to paste.
 */
export async function bootstrapDemo(gw: Gateway, print: (line: string) => void): Promise<void> {
  const existing = await gw.ledger.getSetting(DEMO_SETTING);
  const base = gw.url ?? `http://${gw.config.listen.host}:${gw.config.listen.port}`;
  if (existing) {
    print(`demo account: ${existing} (its key was printed on first start; make another with: node dist/cli.js keys create ${existing})`);
    // A token is generated on the start that finds none (TOLLGATE_ADMIN_TOKEN set before, unset now):
    // the one that worked before no longer does, so this one is shown.
    if (gw.generatedAdminToken) print(`admin token (shown once): ${gw.adminToken}`);
    return;
  }
  const account = await gw.admin.createAccount({ name: 'demo', type: 'prepaid' });
  await gw.admin.addCredits(account.id, { amount: 10, kind: 'purchase' });
  const { key } = await gw.admin.createKey(account.id, { name: 'demo' });
  await gw.ledger.setSetting(DEMO_SETTING, account.id);
  const model = gw.config.models.find((m) => !m.id.endsWith(gw.config.limits.free_models.suffix))?.id ?? gw.config.models[0]?.id;
  print('');
  print(`demo account ${account.id} created with 10 credits.`);
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
