import { defineConfig } from 'vitest/config';

// chDB allows one engine per process, so every test file runs in its own forked process
// (never in worker threads) and opens its own on-disk path. The benchmark smoke test runs on its
// own afterwards (vitest.bench.config.ts): its service children would starve the tests beside it.
export default defineConfig({
  test: {
    pool: 'forks',
    isolate: true,
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
  },
});
