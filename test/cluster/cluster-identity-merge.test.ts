import { afterAll, beforeAll, describe, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { MERGE_CRASH_API_ENV, MERGE_CRASH_WORKER_CONCURRENCY, mergesSurviveWorkerKills } from '../helpers/merge-crash-scenario.js';

/**
 * The identity merge's SIGKILL test (test/integration/identity-merge-crash.test.ts) on a real
 * three-primary Redis Cluster: a pre-login id and its user usually live on different primaries,
 * so every merge step must stay in one slot (a cross-slot script fails with CROSSSLOT).
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('cluster-idcrash', { cluster: true, workerConcurrency: MERGE_CRASH_WORKER_CONCURRENCY, apiEnv: MERGE_CRASH_API_ENV });
}, 120_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('identity merge on a Redis Cluster with workers killed mid-way', () => {
  it('merges every pre-login history exactly once after two SIGKILLs', () => mergesSurviveWorkerKills(h), 420_000);
});
