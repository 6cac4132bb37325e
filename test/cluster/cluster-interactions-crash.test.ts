import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { INTERACTIONS_CRASH_WORKER_CONCURRENCY, interactionsSurviveWorkerKills } from '../helpers/interactions-crash-scenario.js';

/**
 * The interactions crash test (test/integration/interactions-crash.test.ts) on a Redis Cluster
 * (REDIS_CLUSTER_NODES, three primaries): the interactions of one merged job have their profile
 * markers in their users' slots, spread over the three primaries, and their ranking markers in
 * the project's slot; the queues live in BullMQ's hash-tagged slot.
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('cluster-interactions-crash', { cluster: true, workerConcurrency: INTERACTIONS_CRASH_WORKER_CONCURRENCY });
}, 120_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('interactions workers killed mid-job on a Redis Cluster', () => {
  it('stores and counts every interaction exactly once after eight SIGKILLs', async () => {
    expect(h.t.ctx.ingestion.ingest.interactionsQueue.opts.prefix).toBe(`{${h.prefix}}:bull`);
    await interactionsSurviveWorkerKills(h);
  }, 240_000);
});
