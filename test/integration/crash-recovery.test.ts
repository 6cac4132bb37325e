import { afterAll, beforeAll, describe, it } from 'vitest';
import { startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { eventsSurviveWorkerKills } from '../helpers/events-crash-scenario.js';

/**
 * A worker process killed with SIGKILL in the middle of batches, then restarted, leaves every
 * event stored exactly once and every profile correct. The API runs in this process; the workers
 * (which own the embedded ClickHouse) run in a child process that is killed twice.
 */
let h: CrashHarness;

beforeAll(async () => {
  h = await startCrashHarness('crash');
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe('worker killed mid-batch', () => {
  it('stores every event exactly once and every profile correctly after two SIGKILLs', () => eventsSurviveWorkerKills(h), 240_000);
});
