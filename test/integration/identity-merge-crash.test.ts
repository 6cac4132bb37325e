import { afterAll, beforeAll, describe, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { MERGE_CRASH_API_ENV, MERGE_CRASH_WORKER_CONCURRENCY, mergesSurviveWorkerKills } from '../helpers/merge-crash-scenario.js';

/**
 * Identity merges with workers killed mid-way: pre-login histories, signed-in events carrying
 * both ids and more signed-out activity, processed by a workers process SIGKILLed twice and
 * restarted; every merge must be applied exactly once (test/helpers/merge-crash-scenario.ts).
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('idcrash', { workerConcurrency: MERGE_CRASH_WORKER_CONCURRENCY, apiEnv: MERGE_CRASH_API_ENV });
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('identity merge with workers killed mid-way', () => {
  it('merges every pre-login history exactly once after two SIGKILLs', () => mergesSurviveWorkerKills(h), 420_000);
});
