import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { eventsSurviveWorkerKills } from '../helpers/events-crash-scenario.js';

/**
 * The worker-crash test (test/integration/crash-recovery.test.ts) on a Redis Cluster
 * (REDIS_CLUSTER_NODES, three primaries): the users' profiles and markers are spread over the
 * three primaries; the queues live in BullMQ's hash-tagged slot.
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('cluster-crash', { cluster: true });
}, 120_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('worker killed mid-batch on a Redis Cluster', () => {
  it('stores every event exactly once and every profile correctly after two SIGKILLs', async () => {
    expect(h.t.ctx.ingestion.ingest.eventsQueue.opts.prefix).toBe(`{${h.prefix}}:bull`);
    await eventsSurviveWorkerKills(h);
  }, 240_000);
});
