import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import type { EventsJob, EventsQueueJob, InteractionJob, InteractionsBatchJob } from '../../shared/ingestion/jobs.js';
import { processEventsJob } from '../../workers/ingestion/events.processor.js';
import { DecisionNotYetStored, interactionsJobUnits, processInteractionJob } from '../../workers/ingestion/interactions.processor.js';
import { RankingCounterStore } from '../../shared/delivery/ranking-counter.store.js';
import { rankingOps } from '../../shared/delivery/ranking-ops.js';
import type { ClickhouseBatchWriter } from '../../workers/warehouse/clickhouse-batch-writer.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * A retried job inserts nothing twice: the requests whose marker says they were applied skip
 * their rows. Real Redis; the batch writer is replaced by a recorder of the rows it is given
 * (what reaches ClickHouse is the subject, not ClickHouse itself), which can fail on demand.
 */
describe('retries skip the rows of applied requests', () => {
  const prefix = uniquePrefix('retry');
  const keys = redisKeys(prefix);
  let redis: Redis;
  let profiles: ProfileStore;
  const written: string[] = [];
  let failFor: string | undefined;
  async function write(_table: string, lines: readonly string[]): Promise<void> {
    if (failFor && lines.some((l) => l.includes(failFor!))) throw new Error('ClickHouse unavailable');
    written.push(...lines);
  }
  const writer = {
    write,
    // a request's rows come as one chunk of rows separated by commas: recorded row by row
    async writeChunk(table: string, chunk: string, rows: number) {
      const lines = (JSON.parse(`[${chunk}]`) as unknown[]).map((row) => JSON.stringify(row));
      expect(lines).toHaveLength(rows);
      await write(table, lines);
    },
  } as unknown as ClickhouseBatchWriter;

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'events-retry-test');
    await waitForRedis(redis, 5000);
    profiles = new ProfileStore(redis, keys);
  });
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  const request = (userId: string, n: number): EventsJob => ({
    kind: 'events',
    projectId: 'p',
    userId,
    events: Array.from({ length: n }, (_, i) => ({ eventName: 'e', clientEventTs: Date.now(), userProperties: { n: { longValue: String(i) } } })),
    origin: { source: 'api' },
    receivedAt: Date.now(),
  });
  const job = <T>(id: string, data: T) => ({ id, data, attemptsMade: 0, attemptsStarted: 1 }) as unknown as Job<T>;

  it('a merged job whose first request was applied re-inserts only the other one', async () => {
    const data: EventsQueueJob = { kind: 'eventsBatch', requests: [request('alice', 2), request('bob-fails', 3)] };
    const deps = { writer, profiles, now: Date.now };
    failFor = 'bob-fails';
    await expect(processEventsJob(job('J1', data), deps)).rejects.toThrow('ClickHouse unavailable');
    expect(written.filter((l) => l.includes('alice'))).toHaveLength(2);
    // The job failed as soon as one request did; the other finishes its script meanwhile (BullMQ's backoff).
    await new Promise((r) => setTimeout(r, 200));
    written.length = 0;

    failFor = undefined;
    expect(await processEventsJob(job('J1', data), deps)).toBe(3);
    expect(written.filter((l) => l.includes('alice'))).toHaveLength(0);
    expect(written.filter((l) => l.includes('bob-fails'))).toHaveLength(3);
    written.length = 0;

    // A third run (e.g. a stalled duplicate) writes nothing at all.
    expect(await processEventsJob(job('J1', data), deps)).toBe(0);
    expect(written).toHaveLength(0);
    expect((await profiles.get('p', 'alice')).userProperties.n).toEqual({ longValue: '1' });
  });

  it('a retried single job and interaction insert nothing twice; the ranking counters count once', async () => {
    const deps = { writer, profiles, now: Date.now };
    const single: EventsQueueJob = request('carol', 4);
    expect(await processEventsJob(job('J2', single), deps)).toBe(4);
    written.length = 0;
    expect(await processEventsJob(job('J2', single), deps)).toBe(-1);
    expect(written).toHaveLength(0);

    const interaction: InteractionJob = {
      kind: 'interaction',
      projectId: 'p',
      userId: 'dave',
      treatmentId: '7',
      treatmentTrackingId: '7_r',
      surface: 'home',
      interactionType: 'VIEWED',
      interactionTimeMicros: String(Date.now() * 1000),
      receivedAt: Date.now(),
    };
    const ranking = { store: new RankingCounterStore(redis, keys), deltasFor: rankingOps };
    expect(await processInteractionJob(job('J3', interaction), { ...deps, ranking })).toBe(1);
    expect(written).toHaveLength(1);
    expect(await processInteractionJob(job('J3', interaction), { ...deps, ranking })).toBe(-1);
    expect(written).toHaveLength(1);
    expect(await redis.hgetall(keys.rankingStats('p'))).toEqual({ 'v:home:7': '1' });
  });

  it('a merged interactions job: each interaction once under its own identity, alone in its dead letter and in its wait for a decision', async () => {
    const ranking = { store: new RankingCounterStore(redis, keys), deltasFor: rankingOps };
    let decisionStored = false;
    const decisions = async () => (decisionStored ? { userId: 'erin', surfaces: ['home'] } : undefined);
    const letters: { id: string; reason: string }[] = [];
    const deadLetter = async (_d: InteractionJob, id: string, reason: string) => void letters.push({ id, reason });
    const deps = { writer, profiles, now: Date.now, ranking, decisions, decisionWaitMs: 60_000, deadLetter };
    const viewed = (userId: string | undefined, treatmentId: string): InteractionJob =>
      ({
        kind: 'interaction',
        projectId: 'q',
        ...(userId === undefined ? { resolve: true as const } : { userId, surface: 'home' }),
        treatmentId,
        treatmentTrackingId: `${treatmentId}_r-${treatmentId}`,
        interactionType: 'VIEWED',
        interactionTimeMicros: String(Date.now() * 1000),
        receivedAt: Date.now(),
      }) as InteractionJob;
    const malformed = { ...viewed('frank', '9'), interactionTimeMicros: undefined } as unknown as InteractionJob;
    const data: InteractionsBatchJob = {
      kind: 'interactionsBatch',
      interactions: [viewed('dave', '7'), viewed(undefined, '8'), malformed, viewed('dave', '7')],
    };
    const copy = () => structuredClone(data);

    // The decision of the second is not stored yet: the job fails once every other interaction settled
    failFor = undefined;
    written.length = 0;
    const markerReads = vi.spyOn(profiles, 'resolveUnits');
    await expect(processInteractionJob(job('J4', copy()), deps)).rejects.toBeInstanceOf(DecisionNotYetStored);
    // the interactions ready at once share one read of their markers
    expect(markerReads.mock.calls.map(([units]) => units.map((u) => u.id))).toEqual([['J4.0', 'J4.3']]);
    markerReads.mockRestore();
    // each row carries its own identity <jobId>.<index>: the two views of treatment 7 are two interactions
    expect(written.map((l) => JSON.parse(l) as unknown[]).map((r) => r.find((v) => typeof v === 'string' && v.startsWith('j:')))).toEqual(['j:J4.0', 'j:J4.3']);
    expect(letters).toEqual([{ id: 'J4.2', reason: 'malformed interaction job payload' }]);
    expect(await redis.hgetall(keys.rankingStats('q'))).toEqual({ 'v:home:7': '2' });

    // Its retry, once the decision is there, stores the waiting one only (and files the malformed one's letter again: it collapses)
    decisionStored = true;
    written.length = 0;
    const retried = job('J4', copy());
    expect(await processInteractionJob(retried, deps)).toBe(1);
    expect(written).toHaveLength(1);
    expect(written[0]).toContain('"erin"');
    expect(written[0]).toContain('"j:J4.1"');
    expect(await redis.hgetall(keys.rankingStats('q'))).toEqual({ 'v:home:7': '2', 'v:home:8': '1' });
    // the completion handler cuts the markers of the users the interactions were applied to, the resolved one's included
    // (the dead letter's has none: cutting it is a no-op)
    expect(interactionsJobUnits(retried.data, 'J4').map((u) => `${u.userId}/${u.id}`)).toEqual(['dave/J4.0', 'erin/J4.1', 'frank/J4.2', 'dave/J4.3']);

    // A duplicate execution writes and counts nothing
    written.length = 0;
    expect(await processInteractionJob(job('J4', copy()), { ...deps, deadLetter: async () => undefined })).toBe(0);
    expect(written).toHaveLength(0);
    expect(await redis.hgetall(keys.rankingStats('q'))).toEqual({ 'v:home:7': '2', 'v:home:8': '1' });
  });

  it('an erased interaction of a merged job (DeleteUserData rewrote it) is dropped by its tombstone, not dead-lettered', async () => {
    const letters: string[] = [];
    const erased = { deletedAt: async (refs: readonly { userId: string }[]) => refs.map((r) => (r.userId === 'gone' ? Date.now() : undefined)) };
    const deps = { writer, profiles, now: Date.now, erased, deadLetter: async (_d: InteractionJob, id: string) => void letters.push(id) };
    const stub = {
      kind: 'interaction',
      projectId: 'q',
      userId: 'gone',
      treatmentId: '',
      treatmentTrackingId: '',
      surface: '',
      interactionType: '',
      interactionTimeMicros: '0',
      receivedAt: 1,
    };
    const kept: InteractionJob = {
      kind: 'interaction',
      projectId: 'q',
      userId: 'gina',
      surface: 'home',
      treatmentId: '7',
      treatmentTrackingId: '7_r',
      interactionType: 'VIEWED',
      interactionTimeMicros: String(Date.now() * 1000),
      receivedAt: Date.now(),
    };
    written.length = 0;
    const data = { kind: 'interactionsBatch', interactions: [stub as InteractionJob, kept] } satisfies InteractionsBatchJob;
    expect(await processInteractionJob(job('J5', data), deps)).toBe(1);
    expect(letters).toEqual([]);
    expect(written).toHaveLength(1);
    expect(written[0]).toContain('"gina"');
  });
});
