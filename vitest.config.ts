import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20000,
    hookTimeout: 30000,
    pool: 'forks',
    // test/timeouts-gc.test.ts forces garbage collections (global.gc); test/fast-string-prototype.test.ts reads V8's
    // state of an object (%HasFastProperties).
    execArgv: ['--expose-gc', '--allow-natives-syntax'],
  },
});
