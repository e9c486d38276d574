import { defineConfig } from 'vitest/config';

const shared = {
  globalSetup: ['test/support/global-setup.ts'],
  pool: 'forks' as const,
  testTimeout: 30_000,
  hookTimeout: 60_000,
  teardownTimeout: 30_000,
};

export default defineConfig({
  test: {
    projects: [
      // everything but the browser: services, routes and processes on a real database
      { test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: ['test/browser/**', '**/node_modules/**'], ...shared } },
      // the operator console in chromium (skipped with a message when no chromium is found)
      { test: { name: 'browser', include: ['test/browser/**/*.test.ts'], ...shared, testTimeout: 60_000, hookTimeout: 300_000 } },
    ],
  },
});
