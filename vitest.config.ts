import { defineConfig } from 'vitest/config';

// chDB allows one engine per process, so every test file runs in its own forked process
// (never in worker threads) and opens its own on-disk path.
export default defineConfig({
  test: {
    pool: 'forks',
    isolate: true,
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
  },
});
