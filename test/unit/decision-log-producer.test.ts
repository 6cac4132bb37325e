import { describe, expect, it } from 'vitest';
import type { Queue } from 'bullmq';
import pino from 'pino';
import { DecisionLogProducer } from '../../shared/impact/decision-log.queue.js';
import type { DecisionRecord } from '../../shared/impact/decisions.js';

/** A fake queue: records every addBulk, fails the first `failures` calls; `waiting` jobs are reported as its backlog. */
function fakeQueue(failures = 0, waiting = 0) {
  const calls: { data: any; opts: { jobId: string } }[][] = [];
  let left = failures;
  const queue = {
    addBulk: async (jobs: { data: any; opts: { jobId: string } }[]) => {
      calls.push(jobs);
      if (left-- > 0) throw new Error('redis down');
      return [];
    },
    getJobCounts: async () => ({ wait: waiting }),
    close: async () => undefined,
  } as unknown as Queue;
  return { queue, calls };
}

const rec = (i: number, decisions = 1): DecisionRecord => ({
  projectId: 'p',
  userId: `u${i}`,
  responseId: `r${i}`,
  decideTimeMs: 1_700_000_000_000,
  decisions: Array.from({ length: decisions }, (_, d) => ({
    treatmentId: String(d + 1),
    versionNumber: 1,
    surface: 's',
    rank: d + 1,
    outcome: 'RETURNED' as const,
  })),
});
const turn = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = pino({ level: 'silent' });

describe('DecisionLogProducer', () => {
  it('batches by time: the records of the linger window go in one addBulk, split into jobs of bounded size', async () => {
    const { queue, calls } = fakeQueue();
    const p = new DecisionLogProducer(queue, log, { maxRecordsPerJob: 1000, lingerMs: 30, backlogPollMs: 0 });
    for (let i = 0; i < 3; i++) p.record(rec(i));
    await turn();
    for (let i = 3; i < 5; i++) p.record(rec(i)); // a later turn, same window
    p.record(rec(9, 0)); // nothing to log
    await turn();
    expect(calls).toHaveLength(0); // never on the caller's path, and not per turn
    await sleep(60);
    expect(calls).toHaveLength(1);
    expect(calls[0].map((j) => j.data.packed.length)).toEqual([5]);
    await p.close();
  });

  it('batches by size: a full job is sent without waiting for the window', async () => {
    const { queue, calls } = fakeQueue();
    const p = new DecisionLogProducer(queue, log, { maxRecordsPerJob: 2, lingerMs: 60_000, backlogPollMs: 0 });
    for (let i = 0; i < 5; i++) p.record(rec(i, 2));
    await sleep(10);
    // a full batch is sent at once (with whatever else is pending), not after the 60 s window
    expect(calls.flat().map((j) => j.data.packed.length)).toEqual([2, 2, 1]);
    expect(new Set(calls.flat().map((j) => j.opts.jobId)).size).toBe(3);
    // packed positionally: [projectId, userId, responseId, decideTimeMs, [[treatmentId, version, surface, rank, outcome]]]
    expect(calls[0][0].data.packed[0]).toEqual([
      'p',
      'u0',
      'r0',
      1_700_000_000_000,
      [
        ['1', 1, 's', 1, 'RETURNED'],
        ['2', 1, 's', 2, 'RETURNED'],
      ],
    ]);
    p.record(rec(7));
    await p.close();
    expect(calls.flat().map((j) => j.data.packed.length)).toEqual([2, 2, 1, 1]); // close sends what is pending
  });

  it('drops (and counts) new records while the decisions queue holds its limit (ClickHouse down)', async () => {
    const { queue, calls } = fakeQueue(0, 10_000);
    let dropped = 0;
    const p = new DecisionLogProducer(queue, log, {
      maxBacklog: 5_000,
      backlogPollMs: 5,
      lingerMs: 1,
      onMetric: (name, n) => (name === 'decisionsDropped' ? (dropped += n) : 0),
    });
    p.record(rec(1)); // before the first poll: accepted
    await sleep(30);
    for (let i = 0; i < 20; i++) p.record(rec(i));
    expect(dropped).toBe(20);
    await p.close();
    expect(calls.flat()).toHaveLength(1);
  });

  it('re-sends refused jobs with the same ids, and never throws to the caller', async () => {
    const { queue, calls } = fakeQueue(1);
    const p = new DecisionLogProducer(queue, log, { retryDelayMs: 10, lingerMs: 1, backlogPollMs: 0 });
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
    const p = new DecisionLogProducer(queue, log, {
      maxPending: 10,
      retryDelayMs: 60_000,
      backlogPollMs: 0,
      onMetric: (name, n) => (name === 'decisionsDropped' ? (dropped += n) : 0),
    });
    for (let i = 0; i < 25; i++) p.record(rec(i));
    expect(dropped).toBe(15);
    await p.close();
  });
});
