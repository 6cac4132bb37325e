import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import type { EventsJob, InteractionJob } from '../../shared/ingestion/index.js';
import { processEventsJob } from '../../workers/ingestion/events.processor.js';
import { processInteractionJob } from '../../workers/ingestion/interactions.processor.js';
import { rankingOps } from '../../shared/delivery/index.js';
import type { ConversionClaim } from '../../shared/delivery/index.js';
import { targetActionEventOps, targetActionViewOps, type TargetActionDeps } from '../../workers/delivery/target-action-conversions.js';
import type { TargetActionCatalog } from '../../workers/delivery/target-action-cache.js';
import type { ClickhouseBatchWriter } from '../../workers/warehouse/clickhouse-batch-writer.js';
import { uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { RankingCounterStore } from '../../shared/delivery/ranking-counter.store.js';
import { TargetActionViewStore } from '../../shared/delivery/target-action-views.store.js';

/**
 * A target-action event counts as one ranking action of the treatment it converts, exactly once,
 * whatever crashes and retries happen between its steps. Real Redis, the real processors; the
 * ClickHouse writer is a no-op (the rows are not the subject) and the catalogue is given.
 */
const DAY = 86_400_000;
/** Ranking markers are cut to this at once, so a test sees what guards a conversion after they are gone. */
const GRACE = 1;
const P = 'ta';
const T0 = Date.UTC(2026, 10, 1);
const writer = { write: async () => undefined, writeChunk: async () => undefined } as unknown as ClickhouseBatchWriter;
let redis: Redis;
let profiles: ProfileStore;
let ranking: RankingCounterStore;
let deps: TargetActionDeps;
const prefix = uniquePrefix('target-action');
const keys = redisKeys(prefix);
/** purchase is the target action of treatments 7 and 8; surface `gone` is not registered. */
let catalog: TargetActionCatalog;

/** A views store whose `finish` fails the given number of times (a crash after the counters). */
class FlakyViews extends TargetActionViewStore {
  failures = 0;
  override async finish(projectId: string, userId: string, claims: readonly ConversionClaim[]): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('connection lost');
    }
    return super.finish(projectId, userId, claims);
  }
}
let views: FlakyViews;

beforeAll(async () => {
  redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'target-action-test');
  await waitForRedis(redis, 5000);
  profiles = new ProfileStore(redis, keys);
  ranking = new RankingCounterStore(redis, keys);
  views = new FlakyViews(redis, keys);
  deps = { catalog: { get: async () => catalog }, views, ranking, profiles, markerGraceSeconds: GRACE };
});
beforeEach(() => {
  catalog = { treatmentsByEvent: new Map([['purchase', ['7', '8']]]), targeted: new Set(['7', '8']), surfaces: new Set(['home', 'side']) };
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const job = <T>(id: string, data: T) => ({ id, data, attemptsMade: 0, attemptsStarted: 1 }) as unknown as Job<T>;
let seq = 0;

async function view(userId: string, treatmentId: string, surface: string, atMs: number): Promise<void> {
  const data: InteractionJob = {
    kind: 'interaction',
    projectId: P,
    userId,
    treatmentId,
    treatmentTrackingId: `${treatmentId}_r${++seq}`,
    surface,
    interactionType: 'VIEWED',
    interactionTimeMicros: String(atMs * 1000),
    receivedAt: Date.now(),
  };
  await processInteractionJob(job(`i${seq}`, data), {
    writer,
    profiles,
    now: Date.now,
    opsFor: targetActionViewOps(deps),
    ranking: { store: ranking, deltasFor: rankingOps },
  });
}

function events(userId: string, list: { name: string; at: number; insertId?: string }[]): EventsJob {
  return {
    kind: 'events',
    projectId: P,
    userId,
    events: list.map((e) => ({ eventName: e.name, clientEventTs: e.at, ...(e.insertId ? { insertId: e.insertId } : {}) })),
    origin: { source: 'api' },
    receivedAt: Date.now(),
  };
}

const runEvents = (id: string, data: EventsJob, p: ProfileStore = profiles) =>
  processEventsJob(job(id, data), { writer, profiles: p, now: Date.now, opsFor: targetActionEventOps(deps) });

/** The ranking markers of conversions (their ids start with `ta:`, escaped in the key). */
async function conversionMarkers(): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:p:*ranking-job:ta%3A*`, 'COUNT', 1000);
    cursor = next;
    out.push(...batch);
  } while (cursor !== '0');
  return out;
}

async function stats(surface: string, treatmentId: string): Promise<{ views: number; actions: number }> {
  const raw = await redis.hgetall(keys.rankingStats(P));
  return { views: Number(raw[`v:${surface}:${treatmentId}`] ?? 0), actions: Number(raw[`a:${surface}:${treatmentId}`] ?? 0) };
}

describe('a target-action event after a view counts one ranking action', () => {
  it('once, though the job is retried after a crash before its commit and the insertId is sent again', async () => {
    await view('u1', '7', 'home', T0);
    // the profile script (the job's commit point) fails once: the whole job runs again
    let fail = true;
    const crashing = Object.create(profiles) as ProfileStore;
    crashing.applyEventsTo = async (...args) => {
      if (fail) {
        fail = false;
        throw new Error('connection lost');
      }
      return profiles.applyEventsTo(...args);
    };
    const data = events('u1', [{ name: 'purchase', at: T0 + DAY, insertId: 'buy-1' }]);
    await expect(runEvents('E1', data, crashing)).rejects.toThrow('connection lost');
    expect(await stats('home', '7')).toEqual({ views: 1, actions: 1 });
    expect(await runEvents('E1', data, crashing)).toBe(1);
    await waitUntil(async () => (await conversionMarkers()).length === 0, 10_000, 100);
    // the same event again in another job, and another purchase in the window: the view converted once
    await runEvents('E2', events('u1', [{ name: 'purchase', at: T0 + DAY, insertId: 'buy-1' }]));
    await runEvents(
      'E3',
      events('u1', [
        { name: 'purchase', at: T0 + 2 * DAY, insertId: 'buy-2' },
        { name: 'purchase', at: T0 + 3 * DAY },
      ]),
    );
    expect(await stats('home', '7')).toEqual({ views: 1, actions: 1 });
    // a new view is a new chance to convert
    await view('u1', '7', 'home', T0 + 4 * DAY);
    await runEvents('E4', events('u1', [{ name: 'purchase', at: T0 + 5 * DAY, insertId: 'buy-3' }]));
    expect(await stats('home', '7')).toEqual({ views: 2, actions: 2 });
  });

  it('once, when the job crashes after the counter and before the claim is marked counted', async () => {
    await view('u2', '7', 'home', T0);
    const base = (await stats('home', '7')).actions;
    views.failures = 1;
    const data = events('u2', [{ name: 'purchase', at: T0 + DAY, insertId: 'b' }]);
    await expect(runEvents('F1', data)).rejects.toThrow('connection lost');
    expect((await stats('home', '7')).actions).toBe(base + 1);
    // the pending claim is finished by whoever finds it next: here another event of the user
    await runEvents('F2', events('u2', [{ name: 'purchase', at: T0 + 2 * DAY, insertId: 'c' }]));
    expect(await runEvents('F1', data)).toBe(1);
    expect((await stats('home', '7')).actions).toBe(base + 1);
    // its ranking marker was cut to the grace of a completed job's markers
    await waitUntil(async () => (await conversionMarkers()).length === 0, 10_000, 100);
  });

  it('per (treatment, surface) viewed: each treatment of the event and each surface of the view', async () => {
    await view('u3', '7', 'side', T0);
    await view('u3', '8', 'side', T0);
    await view('u3', '8', 'home', T0 + 1000);
    await runEvents('G1', events('u3', [{ name: 'purchase', at: T0 + 2000, insertId: 'x' }]));
    expect(await stats('side', '7')).toEqual({ views: 1, actions: 1 });
    expect(await stats('side', '8')).toEqual({ views: 1, actions: 1 });
    expect(await stats('home', '8')).toEqual({ views: 1, actions: 1 });
  });
});

describe('what does not count', () => {
  it('no view, a view more than 7 days before, an event before the view, another event name, an unregistered surface', async () => {
    const before = await redis.hgetall(keys.rankingStats(P));
    await runEvents('H1', events('nobody', [{ name: 'purchase', at: T0, insertId: 'n' }]));
    await view('old', '8', 'side', T0);
    await runEvents('H2', events('old', [{ name: 'purchase', at: T0 + 7 * DAY + 1, insertId: 'o' }]));
    await view('early', '8', 'side', T0);
    await runEvents('H3', events('early', [{ name: 'purchase', at: T0 - 1, insertId: 'e' }]));
    await view('other', '8', 'side', T0);
    await runEvents('H4', events('other', [{ name: 'signup', at: T0 + 1, insertId: 's' }]));
    const after = await redis.hgetall(keys.rankingStats(P));
    expect(Number(after['a:side:8'] ?? 0)).toBe(Number(before['a:side:8'] ?? 0));
    // the last day of the window still counts
    await runEvents('H5', events('old', [{ name: 'purchase', at: T0 + 7 * DAY, insertId: 'o2' }]));
    expect(Number((await redis.hgetall(keys.rankingStats(P)))['a:side:8'])).toBe(Number(before['a:side:8'] ?? 0) + 1);

    // a surface no longer registered when the event comes is not counted
    await view('gone', '7', 'side', T0);
    catalog = { ...catalog, surfaces: new Set(['home']) };
    const sideBefore = (await stats('side', '7')).actions;
    await runEvents('H6', events('gone', [{ name: 'purchase', at: T0 + 1, insertId: 'g' }]));
    expect((await stats('side', '7')).actions).toBe(sideBefore);
  });

  it('keeps only recent views per user, with a TTL', async () => {
    await view('busy', '7', 'home', T0);
    await view('busy', '8', 'home', T0 + 9 * DAY);
    const hash = await redis.hgetall(keys.targetActionViews(P, 'busy'));
    expect(Object.keys(hash)).toEqual(['v:8:home']);
    const ttl = await redis.ttl(keys.targetActionViews(P, 'busy'));
    expect(ttl).toBeGreaterThan(7 * 86_400);
    expect(ttl).toBeLessThanOrEqual(8 * 86_400);
    // views of treatments without a target action are not remembered
    await view('plain', '9', 'home', T0);
    expect(await redis.exists(keys.targetActionViews(P, 'plain'))).toBe(0);
  });
});
