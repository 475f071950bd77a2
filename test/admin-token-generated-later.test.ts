import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bootstrapDemo } from '../src/bootstrap-demo.js';
import { parseConfig } from '../src/config/load.js';
import { embeddedConfig } from '../src/config/defaults.js';
import { startGateway } from '../src/main.js';
import { createLogger } from '../src/observability/logger.js';

// CONTRACT §2: "admin_token: ${TOLLGATE_ADMIN_TOKEN}   # when unset, one is generated, stored and
// printed on first start". A data folder first started with TOLLGATE_ADMIN_TOKEN set (the demo account
// made, no token generated), then started without it: that start generates and stores a token (the
// old one stops working), and `npm start` prints it beside the demo account's line. It printed the
// token only with a newly made demo account: this one was printed nowhere.
describe('npm start: an admin token generated on a start after the first', () => {
  it('is printed on the start that generated it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-token-later-'));
    const base = {
      ...embeddedConfig,
      database_url: `sqlite:${join(dir, 'tollgate.db')}`,
      listen: { host: '127.0.0.1', port: 0 },
      log_level: 'silent' as const,
    };
    const quiet = createLogger('silent');

    const first = await startGateway(parseConfig(base, { TOLLGATE_ADMIN_TOKEN: 'set-by-the-operator-0123456789' }), { listen: false, logger: quiet });
    await bootstrapDemo(first, () => undefined);
    await first.close();

    const second = await startGateway(parseConfig(base, {}), { listen: false, logger: quiet });
    const printed: string[] = [];
    await bootstrapDemo(second, (line) => printed.push(line));
    const { adminToken, generatedAdminToken } = second;
    await second.close();

    rmSync(dir, { recursive: true, force: true });
    expect(generatedAdminToken).toBe(true);
    expect(printed.join('\n')).toContain(adminToken);
  });
});
