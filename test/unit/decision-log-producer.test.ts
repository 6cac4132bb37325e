import { describe, expect, it } from 'vitest';
import type { Queue } from 'bullmq';
import pino from 'pino';
import { DecisionLogProducer } from '../../shared/impact/decision-log.queue.js';
import type { DecisionRecord } from '../../shared/impact/decisions.js';

/** A fake queue: records every addBulk, fails the first `failures` calls. */
function fakeQueue(failures = 0) {
  const calls: { data: any; opts: { jobId: string } }[][] = [];
  let left = failures;
  const queue = {
    addBulk: async (jobs: { data: any; opts: { jobId: string } }[]) => {
      calls.push(jobs);
      if (left-- > 0) throw new Error('redis down');
      return [];
    },
    close: async () => undefined,
  } as unknown as Queue;
  return { queue, calls };
}

const rec = (i: number, decisions = 1): DecisionRecord => ({
  projectId: 'p',
  userId: `u${i}`,
  responseId: `r${i}`,
  decideTimeMs: 1_700_000_000_000,
  decisions: Array.from({ length: decisions }, (_, d) => ({ treatmentId: String(d + 1), versionNumber: 1, surface: 's', rank: d + 1, outcome: 'RETURNED' as const })),
});
const turn = () => new Promise((r) => setImmediate(r));
const log = pino({ level: 'silent' });

describe('DecisionLogProducer', () => {
  it('sends the records of one event-loop turn in one addBulk, split into jobs of bounded size', async () => {
    const { queue, calls } = fakeQueue();
    const p = new DecisionLogProducer(queue, log, { maxRecordsPerJob: 2 });
    for (let i = 0; i < 5; i++) p.record(rec(i));
    p.record(rec(9, 0)); // nothing to log
    expect(calls).toHaveLength(0); // never on the caller's path
    await turn();
    expect(calls).toHaveLength(1);
    expect(calls[0].map((j) => j.data.records.length)).toEqual([2, 2, 1]);
    expect(new Set(calls[0].map((j) => j.opts.jobId)).size).toBe(3);
  });

  it('re-sends refused jobs with the same ids, and never throws to the caller', async () => {
    const { queue, calls } = fakeQueue(1);
    const p = new DecisionLogProducer(queue, log, { retryDelayMs: 10 });
    expect(() => p.record(rec(1))).not.toThrow();
    await turn();
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toHaveLength(2);
    expect(calls[1].map((j) => j.opts.jobId)).toEqual(calls[0].map((j) => j.opts.jobId));
    expect(() => p.record({ projectId: 'p' } as unknown as DecisionRecord)).not.toThrow();
  });

  it('drops (and counts) records beyond maxPending instead of growing without bound', async () => {
    const { queue } = fakeQueue(1_000_000);
    let dropped = 0;
    const p = new DecisionLogProducer(queue, log, { maxPending: 10, retryDelayMs: 60_000, onMetric: (name, n) => (name === 'decisionsDropped' ? (dropped += n) : 0) });
    for (let i = 0; i < 25; i++) p.record(rec(i));
    expect(dropped).toBe(15);
    await p.close();
  });
});
