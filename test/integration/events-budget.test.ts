import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { EventsBudget, eventsJobWeight } from '../../workers/ingestion/events-budget.js';
import type { EventsBatchJob, EventsJob, EventsQueueJob } from '../../shared/ingestion/index.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { createIngestProducers } from '../../shared/ingestion/ingest-producers.queue.js';

const request = (events: number): EventsJob =>
  ({
    kind: 'events',
    projectId: 'p',
    userId: 'u',
    origin: { source: 'api' },
    events: Array.from({ length: events }, (_, i) => ({ eventName: 'e', clientEventTs: i })),
  }) as unknown as EventsJob;
const merged = (...sizes: number[]): EventsBatchJob => ({ kind: 'eventsBatch', requests: sizes.map(request) });

describe('eventsJobWeight', () => {
  it("counts a merged job's events over its requests, a request's or message's own, and 1 for anything else", () => {
    expect(eventsJobWeight(merged(100, 250, 3))).toBe(353);
    expect(eventsJobWeight(request(7))).toBe(7);
    expect(eventsJobWeight({ kind: 'userAttributes' } as unknown as EventsQueueJob)).toBe(1);
    // malformed payloads still weigh something: they are dead letters, not free
    expect(eventsJobWeight(undefined)).toBe(1);
    expect(eventsJobWeight({ kind: 'eventsBatch', requests: [null, request(2)] } as unknown as EventsQueueJob)).toBe(3);
    expect(eventsJobWeight(request(0))).toBe(1);
  });
});

describe('EventsBudget', () => {
  it("sets the worker's concurrency to the events budget over its jobs' recent mean size, at most its job limit", async () => {
    const knob = { concurrency: 0 };
    const budget = new EventsBudget(25_600, 256, 500);
    budget.attach(knob);
    // before any job: as if jobs were the largest merged ones
    expect(knob.concurrency).toBe(51);
    // single Pub/Sub messages: the concurrency climbs back to the job limit
    for (let i = 0; i < 60; i++) await budget.run(1, async () => undefined);
    expect(knob.concurrency).toBe(256);
    // then merged jobs of 500 events: it falls again
    for (let i = 0; i < 60; i++) await budget.run(500, async () => undefined);
    expect(knob.concurrency).toBeGreaterThanOrEqual(51);
    expect(knob.concurrency).toBeLessThan(60);
    expect(budget.held).toBe(0);
  });

  it('fetches nothing more once the jobs running hold the budget, and resumes as they finish', async () => {
    const knob = { concurrency: 0 };
    const budget = new EventsBudget(1000, 256, 1);
    budget.attach(knob);
    expect(knob.concurrency).toBe(256);
    const gates: (() => void)[] = [];
    const running = [0, 1, 2].map(() => budget.run(400, () => new Promise<void>((r) => gates.push(r))));
    // 1,200 events held by 3 jobs: no more than those 3
    expect(budget.held).toBe(1200);
    expect(knob.concurrency).toBe(3);
    gates[0]();
    await running[0];
    // 800 held, under the budget: the mean size decides again (1000 ÷ the mean of 1, 400, 400, 400)
    expect(budget.held).toBe(800);
    expect(knob.concurrency).toBeGreaterThan(3);
    gates[1]();
    gates[2]();
    await Promise.all(running);
    expect(budget.held).toBe(0);
  });

  it('releases its events when the job fails', async () => {
    const knob = { concurrency: 0 };
    const budget = new EventsBudget(100, 10, 1);
    budget.attach(knob);
    let during = 0;
    const failing = budget.run(150, async () => {
      during = knob.concurrency;
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    // over the budget while it ran: only itself
    expect(during).toBe(1);
    expect(budget.held).toBe(0);
    expect(knob.concurrency).toBe(6); // 100 ÷ a mean of 0.9 × 1 + 0.1 × 150
  });
});

describe('EventsBudget steering a BullMQ worker on Redis', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const prefix = `test-events-budget-${randomUUID()}`;
  let queue: Queue<EventsQueueJob> | undefined;
  let worker: Worker<EventsQueueJob> | undefined;

  beforeAll(async () => {
    await redis.ping();
  });
  afterEach(async () => {
    await worker?.close();
    await queue?.close();
    await deletePrefix(redis, prefix);
  });
  afterAll(async () => {
    redis.disconnect();
  });

  async function runJobs(jobs: EventsQueueJob[], budget: EventsBudget, concurrency: number): Promise<{ maxActive: number; maxHeld: number }> {
    queue = new Queue<EventsQueueJob>('events', { connection: redis, prefix });
    await queue.addBulk(jobs.map((data) => ({ name: 'events', data })));
    let active = 0;
    let maxActive = 0;
    let maxHeld = 0;
    let done = 0;
    let allDone!: () => void;
    const finished = new Promise<void>((r) => (allDone = r));
    worker = new Worker<EventsQueueJob>(
      'events',
      (job) =>
        budget.run(eventsJobWeight(job.data), async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          maxHeld = Math.max(maxHeld, budget.held);
          // a job waits for the insert holding its rows
          await new Promise((r) => setTimeout(r, 30));
          active--;
          if (++done === jobs.length) allDone();
        }),
      { connection: redis, prefix, concurrency },
    );
    budget.attach(worker);
    await finished;
    return { maxActive, maxHeld };
  }

  it('merges LogEvents requests into jobs of up to the configured MERGED_JOB_EVENTS (500 by default)', async () => {
    const jobsFor = async (sizes: number[], merged?: number): Promise<number> => {
      const at = `${prefix}-${merged ?? 'default'}-${sizes.length}`;
      const producers = createIngestProducers(redis, at, merged);
      try {
        // one turn, as concurrent requests are
        await Promise.all(sizes.map((n, i) => producers.logEvents.enqueue({ ...request(n), userId: `u-${i}` }, { weight: n })));
        return (await producers.eventsQueue.getJobCounts('wait')).wait;
      } finally {
        await producers.close();
        await deletePrefix(redis, at);
      }
    };
    // requests of 100 (the ingest benchmark's): 500 fill a job at once, the sixth goes at the turn's end; at 100, one job each
    const hundreds = [100, 100, 100, 100, 100, 100];
    expect(await jobsFor(hundreds)).toBe(2);
    expect(await jobsFor(hundreds, 100)).toBe(6);
    // requests of 60: one job of 300 (the batcher's test shows it goes at the turn's end); at 100, each 120 goes as 60 | 60
    const sixties = [60, 60, 60, 60, 60];
    expect(await jobsFor(sixties)).toBe(1);
    expect(await jobsFor(sixties, 100)).toBe(5);
  });

  it('runs large jobs a few at a time and small ones at its full concurrency', async () => {
    // 24 merged jobs of 500 events, a budget of 2,000 events: at most 4 such jobs, not 64
    const large = await runJobs(
      Array.from({ length: 24 }, () => merged(250, 250)),
      new EventsBudget(2000, 64, 500),
      64,
    );
    expect(large.maxActive).toBeLessThanOrEqual(5);
    expect(large.maxHeld).toBeLessThanOrEqual(2500);
    await worker!.close();
    await queue!.close();
    await deletePrefix(redis, prefix);
    // 200 single-event jobs under the same budget: far more of them at once
    const small = await runJobs(
      Array.from({ length: 200 }, () => request(1)),
      new EventsBudget(2000, 64, 500),
      64,
    );
    expect(small.maxActive).toBeGreaterThan(20);
  });
});
