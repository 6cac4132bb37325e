import { defineConfig } from 'vitest/config';

// The benchmark smoke test (every scenario once at --size tiny), alone, after the other tests.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/bench/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
  },
});
