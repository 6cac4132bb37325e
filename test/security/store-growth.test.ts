import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { CHANGE_ENTRY_MAX_BYTES } from '../../shared/projects/change-entry.js';
import { INSERT_MARKER_TTL_SECONDS } from '../../shared/profiles/insert-markers.js';

/**
 * No request grows a store without bound. Redis cost of ingestion at steady state (markers
 * and profiles), markers that outlive their jobs, profile TTL, ranking counters, change log.
 */
const USERS = 1000;
const EVENTS_PER_USER = 10;
const DAY_MS = 86_400_000;

let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;
let treatmentId: string;

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, 'growth');
  const m = (op: string, body: object) => s.post(`/v1/${op}`, { projectId: keys.projectId, ...body }, { 'x-api-key': keys.management });
  expect((await m('InsertSurface', { name: 'home' })).status).toBe(200);
  expect(
    (
      await m('InsertTreatmentType', {
        treatmentTypeName: 'card',
        lastModifiedBy: 'setup',
        surfaces: [{ surfaceName: 'home' }],
        contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100_000, isPerLanguage: true }],
      })
    ).status,
  ).toBe(200);
  const tr = await m('InsertTreatment', {
    name: 'T',
    description: 'growth',
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    startTimestamp: new Date(Date.now() - 3_600_000).toISOString(),
    content: content('v0'),
    shouldPublish: true,
  });
  expect(tr.body).toHaveProperty('treatment');
  treatmentId = tr.body.treatment.treatmentId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

function content(title: string) {
  return { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }] };
}

async function idle(): Promise<boolean> {
  const e = await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  const i = await s.ctx.ingestion.ingest.interactionsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return [...Object.values(e), ...Object.values(i)].every((n) => n === 0);
}

/** Keys of the service under the test's prefix, except BullMQ's queues. */
async function serviceKeys(match: string): Promise<string[]> {
  const out: string[] = [];
  const r = s.ctx.redis;
  let cursor = '0';
  do {
    const [next, batch] = await r.scan(cursor, 'MATCH', `${s.ctx.config.redisPrefix}:${match}`, 'COUNT', 1000);
    cursor = next;
    out.push(...batch);
  } while (cursor !== '0');
  return out;
}

/** Markers of completed jobs only outlive them by the grace (10 locks, 300 s by default), never by their long backstop TTL. */
const MARKER_GRACE_SECONDS = 300;
async function jobMarkersCut(): Promise<boolean> {
  const list = [...(await serviceKeys('u:*:job:*')), ...(await serviceKeys('p:*:ranking-job:*'))];
  const p = s.ctx.redis.pipeline();
  for (const k of list) p.ttl(k);
  const ttls = ((await p.exec()) ?? []).map(([, t]) => Number(t));
  return ttls.every((t) => t === -2 || (t > 0 && t <= MARKER_GRACE_SECONDS));
}

/** The events queue in Redis: job hashes kept (completed or not), and all its keys' bytes. */
async function queueFootprint(): Promise<{ jobs: number; bytes: number; streamEntries: number; streamBytes: number }> {
  const all = await serviceKeys('bull:events:*');
  const p = s.ctx.redis.pipeline();
  for (const k of all) p.type(k);
  const types = ((await p.exec()) ?? []).map(([, t]) => String(t));
  const jobs = all.filter((k, i) => types[i] === 'hash' && !k.endsWith(':meta')).length;
  const stream = all.find((k) => k.endsWith(':events'));
  return { jobs, bytes: await memoryOf(all), streamEntries: stream ? await s.ctx.redis.xlen(stream) : 0, streamBytes: stream ? await memoryOf([stream]) : 0 };
}

async function memoryOf(list: string[]): Promise<number> {
  const p = s.ctx.redis.pipeline();
  for (const k of list) p.memory('USAGE', k, 'SAMPLES', '0');
  const res = (await p.exec()) ?? [];
  return res.reduce((n, [, v]) => n + Number(v ?? 0), 0);
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

describe('markers and profiles at steady state', () => {
  it(`costs a bounded number of bytes per event: ${USERS * EVENTS_PER_USER} events of ${USERS} users with insertIds`, async () => {
    // Events of yesterday: markers go by arrival day, so each user has one set however many event days.
    const base = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS / 2;
    const users = Array.from({ length: USERS }, (_, u) => `user-${u}`);
    const send = (userId: string) =>
      s.post(
        '/v1/LogEvents',
        {
          projectId: keys.projectId,
          userId,
          events: Array.from({ length: EVENTS_PER_USER }, (_, e) => ({
            eventName: 'purchase',
            clientEventTimestamp: new Date(base + e * 1000).toISOString(),
            insertId: `${userId}-event-${e}-${'x'.repeat(20)}`,
            userProperties: e === 0 ? { plan: { stringValue: 'gold' } } : undefined,
          })),
        },
        { 'x-api-key': keys.logEvents },
      );
    const queueBefore = await queueFootprint();
    await inBatches(users, 50, async (u) => {
      expect((await send(u)).status).toBe(200);
    });
    await waitUntil(idle, 120_000, 100);
    // Job markers are cut to the grace when their job completes (asynchronously, right after).
    await waitUntil(jobMarkersCut, 10_000);
    // Completed jobs are removed at once: no request's payload stays in the queue. What is left
    // is BullMQ's event stream (a few entries per job, ids and return values, capped at ~10,000
    // entries per queue whatever the payloads' size).
    const queueAfter = await queueFootprint();
    expect(queueAfter.jobs).toBe(0);
    const leftPerRequest = (queueAfter.bytes - queueBefore.bytes) / USERS;
    console.log(
      `QUEUE after completion: ${queueAfter.jobs} jobs kept, ${leftPerRequest.toFixed(1)} bytes/request left (event stream ${queueAfter.streamEntries} entries, ${queueAfter.streamBytes} bytes) for requests of ~${JSON.stringify({ userId: users[0], events: Array(EVENTS_PER_USER).fill({ eventName: 'purchase', clientEventTimestamp: new Date().toISOString(), insertId: 'x'.repeat(40) }) }).length} bytes`,
    );
    expect(leftPerRequest).toBeLessThan(400);
    expect(queueAfter.streamEntries).toBeLessThanOrEqual(10_000 + 1000);
    const jobMarkers = await serviceKeys('u:*:job:*');
    expect(jobMarkers.length).toBeLessThanOrEqual(USERS);

    const markerSets = await serviceKeys('u:*:ins:*');
    const profiles = await serviceKeys('u:*:profile');
    expect(markerSets).toHaveLength(USERS);
    expect(profiles).toHaveLength(USERS);
    const markerBytes = await memoryOf(markerSets);
    const profileBytes = await memoryOf(profiles);
    const perEvent = markerBytes / (USERS * EVENTS_PER_USER);
    const perUser = profileBytes / USERS;
    const perRequest = jobMarkers.length ? (await memoryOf(jobMarkers)) / jobMarkers.length : 0;
    console.log(
      `MEMORY USAGE (SAMPLES 0): insertId markers ${perEvent.toFixed(1)} bytes/event (${USERS} day sets of ${EVENTS_PER_USER}), profile ${perUser.toFixed(1)} bytes/user (1 property), job marker ${perRequest.toFixed(1)} bytes/request for ${MARKER_GRACE_SECONDS} s after completion`,
    );
    // intset of 64-bit markers: 8 bytes each plus the key's own overhead shared by the day's events
    expect(perEvent).toBeLessThan(24);
    expect(perUser).toBeLessThan(200);
    expect(await s.ctx.redis.object('ENCODING', markerSets[0])).toBe('intset');

    // Retries of every request (same insertIds, same timestamps): nothing new is stored.
    await inBatches(users.slice(0, 200), 50, async (u) => {
      expect((await send(u)).status).toBe(200);
    });
    await waitUntil(idle, 60_000, 100);
    await waitUntil(jobMarkersCut, 10_000);
    expect(await serviceKeys('u:*:ins:*')).toHaveLength(USERS);
    expect(await memoryOf(markerSets)).toBe(markerBytes);
    const stored = await s.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String}', { p: keys.projectId });
    expect(Number(stored[0].n)).toBe(USERS * EVENTS_PER_USER);

    // TTLs: profiles RETENTION_DAYS after their last change.
    const r = s.ctx.redis;
    const retention = s.ctx.config.retentionDays * 86_400;
    for (const k of profiles.slice(0, 20)) {
      const ttl = await r.ttl(k);
      expect(ttl).toBeGreaterThan(retention - 600);
      expect(ttl).toBeLessThanOrEqual(retention);
    }
    // Marker sets: 8 days after the end of their arrival day (UTC).
    for (const k of markerSets.slice(0, 20)) {
      const ttl = await r.ttl(k);
      expect(ttl).toBeGreaterThan(INSERT_MARKER_TTL_SECONDS);
      expect(ttl).toBeLessThanOrEqual(INSERT_MARKER_TTL_SECONDS + 86_400);
    }
  }, 240_000);
});

describe('interactions', () => {
  const interaction = (surface: string, i: number) =>
    s.post(
      '/v1/LogTreatmentInteraction',
      {
        projectId: keys.projectId,
        userId: `iu-${i % 10}`,
        treatmentTrackingId: `${treatmentId}_r${i}`,
        treatmentId,
        surface,
        interactionType: i % 3 === 0 ? 'CLICKED' : 'VIEWED',
        interactionTimeMicros: String(Date.now() * 1000),
      },
      { 'x-api-key': keys.delivery },
    );

  it('counts known surfaces only: unknown ones are 400 and never reach the ranking hash; no marker outlives its job', async () => {
    const rankingKey = s.ctx.keys.rankingStats(keys.projectId);
    const ok = await Promise.all(Array.from({ length: 30 }, (_, i) => interaction('home', i)));
    expect(ok.map((a) => a.status)).toEqual(Array(30).fill(200));
    await waitUntil(idle, 30_000);
    const fields = await s.ctx.redis.hkeys(rankingKey);
    expect(fields.sort()).toEqual([`a:home:${treatmentId}`, `v:home:${treatmentId}`]);

    const bad = await Promise.all(Array.from({ length: 50 }, (_, i) => interaction(`junk-${i}-${'z'.repeat(100)}`, i)));
    for (const b of bad) {
      expect(b.status).toBe(400);
      expect(b.body.error.details[0].field).toBe('surface');
    }
    await waitUntil(idle, 30_000);
    expect(await s.ctx.redis.hlen(rankingKey)).toBe(2);
    await waitUntil(jobMarkersCut, 10_000);
  });

  it('accepts a surface registered a moment ago', async () => {
    const r = await s.post('/v1/InsertSurface', { projectId: keys.projectId, name: 'fresh' }, { 'x-api-key': keys.management });
    expect(r.status).toBe(200);
    expect((await interaction('fresh', 1)).status).toBe(200);
  });
});

describe('change log', () => {
  it('an entry stays small after 200 edits of one treatment, and a huge one is capped with a flag', async () => {
    for (let i = 1; i <= 200; i++) {
      const r = await s.post(
        '/v1/UpdateTreatment',
        { projectId: keys.projectId, treatmentId, lastModifiedBy: 'editor', content: content(`version ${i} ${'y'.repeat(200)}`) },
        { 'x-api-key': keys.management },
      );
      expect(r.status).toBe(200);
    }
    const changes = (await s.admin('ListChanges', { projectId: keys.projectId, pageSize: 200 })).body.changes as {
      operation: string;
      before: unknown;
      after: unknown;
      truncated?: boolean;
    }[];
    const updates = changes.filter((c) => c.operation === 'UpdateTreatment');
    expect(updates).toHaveLength(200);
    const size = (c: { before: unknown; after: unknown }) => JSON.stringify(c.before).length + JSON.stringify(c.after).length;
    const newest = updates[0];
    const oldest = updates[updates.length - 1];
    // The 200th entry is no larger than the first: it records the new version, not all 201.
    expect(size(newest)).toBeLessThan(size(oldest) * 1.2);
    expect(size(newest)).toBeLessThan(4096);
    expect((newest.after as { versions: unknown[] }).versions).toHaveLength(1);

    const big = await s.post(
      '/v1/UpdateTreatment',
      { projectId: keys.projectId, treatmentId, lastModifiedBy: 'editor', content: content('w'.repeat(60_000)) },
      { 'x-api-key': keys.management },
    );
    expect(big.status).toBe(200);
    const [last] = (await s.admin('ListChanges', { projectId: keys.projectId, pageSize: 1 })).body.changes;
    expect(last.truncated).toBe(true);
    expect(size(last)).toBeLessThanOrEqual(CHANGE_ENTRY_MAX_BYTES);
    // The raw stream entry is bounded too.
    const [[, flat]] = (await s.ctx.redis.xrevrange(s.ctx.keys.changes(keys.projectId), '+', '-', 'COUNT', 1)) as [string, string[]][];
    expect(flat.reduce((n, x) => n + Buffer.byteLength(x), 0)).toBeLessThan(CHANGE_ENTRY_MAX_BYTES + 1024);
  }, 120_000);
});
