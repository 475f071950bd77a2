import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20000,
    hookTimeout: 30000,
    pool: 'forks',
    // test/timeouts-gc.test.ts forces garbage collections (global.gc).
    execArgv: ['--expose-gc'],
  },
});
