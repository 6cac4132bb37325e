import { afterAll, beforeAll, describe, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { INTERACTIONS_CRASH_WORKER_CONCURRENCY, interactionsSurviveWorkerKills } from '../helpers/interactions-crash-scenario.js';

/**
 * A worker process killed with SIGKILL in the middle of interaction jobs, then restarted, leaves
 * every interaction stored exactly once and counted exactly once in its user's profile and in
 * the project's ranking counters (test/helpers/interactions-crash-scenario.ts). The API runs in
 * this process; the workers (which own the embedded ClickHouse) run in a child process that is
 * killed eight times.
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('interactions-crash', { workerConcurrency: INTERACTIONS_CRASH_WORKER_CONCURRENCY });
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('interactions workers killed mid-job', () => {
  it('stores and counts every interaction exactly once after eight SIGKILLs', () => interactionsSurviveWorkerKills(h), 240_000);
});
