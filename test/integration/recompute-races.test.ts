import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { aggregationApi, countOf, DAY, gate, iso } from '../helpers/aggregation-api.js';
import { utcDayOffset } from '../../shared/aggregation/data-field-values.js';
import { recomputeDataFields } from '../../workers/aggregation/recompute.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { identityMerger } from '../../workers/profiles/identity-merge.js';
import { pino } from 'pino';

/**
 * A recompute from ClickHouse beside the ingestion workers: a job stores its rows, then updates the
 * profile; an identity merge copies the pre-login id's rows under the user, then merges the
 * profiles. Staged deterministically (the workers' profile update or merge held, the recompute's
 * read held), each interleaving counts every event once.
 */

let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;
const { dataFieldIds, logEvents, dataFields, expectFields, queuesIdle, recomputeDeps } = aggregationApi(() => ({ s, keys }));

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, 'races');
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

/** A recompute of the field whose first read of the day counts is held (after the read) until `held` opens. */
async function recomputeHeldAfterFirstRead(id: string) {
  const read = gate();
  const held = gate();
  let reads = 0;
  const warehouse: Pick<Warehouse, 'query'> = {
    query: async (sql, params) => {
      const rows = await s.clickhouse.query(sql, params);
      if (sql.includes('dayPairs') && reads++ === 0) {
        read.open();
        await held.opened;
      }
      return rows as never;
    },
  };
  const running = recomputeDataFields(recomputeDeps(warehouse), { projectId: keys.projectId, dataFieldIds: [id] });
  await read.opened;
  return { held, pageReads: () => reads, running };
}

describe('a recompute beside ingest jobs (exactly once for events dated in finished days)', () => {
  const yesterday = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => ({ eventName: tag, clientEventTimestamp: iso(Date.now() - DAY - i * 1000) }));

  it('a job whose rows are stored but whose profile update is pending is not counted twice by a RunAggregations between the two', async () => {
    const [id] = await dataFieldIds(countOf('race-pending', 'LAST_7D'));
    const held = gate();
    const reached = gate();
    // the workers' profile update of this user waits, after the job's rows are stored, until the gate opens
    const apply = ProfileStore.prototype.applyEventsTo;
    const spy = vi.spyOn(ProfileStore.prototype, 'applyEventsTo').mockImplementation(async function (this: ProfileStore, ...args) {
      if (args[1] === 'u-race-pending') {
        reached.open();
        await held.opened;
      }
      return apply.apply(this, args);
    });
    try {
      await logEvents('u-race-pending', yesterday(5, 'race-pending'));
      await reached.opened;
      // the rows are in ClickHouse; the recompute counts them, and leaves the user's count to the job
      const run = await s.admin('RunAggregations', { projectId: keys.projectId });
      expect(run.status).toBe(200);
      expect((await dataFields('u-race-pending'))[id] ?? '0').toBe('0');
    } finally {
      held.open();
      spy.mockRestore();
    }
    await waitUntil(queuesIdle, 20_000);
    await expectFields('u-race-pending', { [id]: '5' }, 15_000);
    // and a recompute once the job is done finds the same count
    expect((await s.admin('RunAggregations', { projectId: keys.projectId })).status).toBe(200);
    expect((await dataFields('u-race-pending'))[id]).toBe('5');
  });

  it("a job applied between the recompute's read and its write is not undone: the user is read again", async () => {
    const [id] = await dataFieldIds(countOf('race-applied', 'LAST_7D'));
    await logEvents('u-race-applied', yesterday(2, 'race-applied'));
    await expectFields('u-race-applied', { [id]: '2' }, 15_000);
    // the recompute's first read of the day counts is held until the new events are applied
    const { held, pageReads, running } = await recomputeHeldAfterFirstRead(id);
    await logEvents(
      'u-race-applied',
      yesterday(3, 'race-applied').map((e, i) => ({ ...e, clientEventTimestamp: iso(Date.now() - DAY - (10 + i) * 1000) })),
    );
    await expectFields('u-race-applied', { [id]: '5' }, 15_000);
    held.open();
    const result = await running;
    expect((await dataFields('u-race-applied'))[id]).toBe('5'); // not the 2 the first read found
    expect(result).toMatchObject({ dataFieldsRecomputed: 1, usersLeft: 0 });
    expect(pageReads()).toBeGreaterThanOrEqual(2); // the user was read again
  });

  it("a job that never updates the profile holds a user back only for the run's budget; the next run settles it", async () => {
    const [id] = await dataFieldIds(countOf('race-stuck', 'LAST_7D'));
    await logEvents('u-race-stuck', yesterday(1, 'race-stuck'));
    await expectFields('u-race-stuck', { [id]: '1' }, 15_000);
    const { redis, keys: rk } = s.ctx;
    const profileKey = rk.profile(keys.projectId, 'u-race-stuck');
    await redis.hset(profileKey, `dc:${id}:${utcDayOffset(Date.now(), -1)}`, '40'); // drifted
    // a job marked in flight that will never come back (dead-lettered after its rows, say)
    await new ProfileStore(redis, rk).markInFlight(keys.projectId, 'u-race-stuck', 'lost-job');
    const first = await recomputeDataFields(recomputeDeps(s.clickhouse), { projectId: keys.projectId, dataFieldIds: [id] }, { secondReadsMs: 300 });
    expect(first).toMatchObject({ usersLeft: 1, usersUpdated: 0 }); // left, not counted as written
    expect((await dataFields('u-race-stuck'))[id]).toBe('40'); // left as it was
    await redis.del(rk.ingestInFlight(keys.projectId, 'u-race-stuck')); // (or its mark lapses)
    const second = await recomputeDataFields(recomputeDeps(s.clickhouse), { projectId: keys.projectId, dataFieldIds: [id] });
    expect(second.usersLeft).toBe(0);
    expect((await dataFields('u-race-stuck'))[id]).toBe('1');
  });
});

describe('a recompute beside an identity merge (the pre-login history counted once)', () => {
  const yesterday = (n: number, tag: string, offsetS = 0) =>
    Array.from({ length: n }, (_, i) => ({ eventName: tag, clientEventTimestamp: iso(Date.now() - DAY - (offsetS + i) * 1000) }));
  /** The user's and the pre-login id's own events, each counted in their profiles. */
  async function histories(id: string, tag: string, user: string, temp: string): Promise<void> {
    await logEvents(temp, yesterday(2, tag));
    await logEvents(user, yesterday(3, tag, 10));
    await expectFields(temp, { [id]: '2' }, 15_000);
    await expectFields(user, { [id]: '3' }, 15_000);
    // past the recompute's clock margin: these jobs' own `@applied` stamps defer neither user
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const login = (tag: string, temp: string) => [{ eventName: `${tag}-login`, clientEventTimestamp: iso(Date.now() - 1000), preLoginTempUserId: temp }];

  it("a recompute between the copy of the pre-login rows and the profiles' merge leaves the user to the merge", async () => {
    const [id] = await dataFieldIds(countOf('merge-pending', 'LAST_7D'));
    await histories(id, 'merge-pending', 'u-merge-pending', 'anon-merge-pending');
    const held = gate();
    const reached = gate();
    // the merge of the profiles waits, after the pre-login rows are copied under the user, until the gate opens
    const merge = ProfileStore.prototype.mergeProfile;
    const spy = vi.spyOn(ProfileStore.prototype, 'mergeProfile').mockImplementation(async function (this: ProfileStore, ...args) {
      if (args[2] === 'u-merge-pending') {
        reached.open();
        await held.opened;
      }
      return merge.apply(this, args);
    });
    try {
      await logEvents('u-merge-pending', login('merge-pending', 'anon-merge-pending'));
      await reached.opened;
      // ClickHouse holds the pre-login rows under the user; the recompute leaves the user's count to the merge
      const run = await recomputeDataFields(recomputeDeps(s.clickhouse), { projectId: keys.projectId, dataFieldIds: [id] }, { secondReadsMs: 300 });
      expect(run.usersLeft).toBe(1);
      expect((await dataFields('u-merge-pending'))[id]).toBe('3');
    } finally {
      held.open();
      spy.mockRestore();
    }
    await waitUntil(queuesIdle, 20_000);
    await expectFields('u-merge-pending', { [id]: '5' }, 15_000);
    // and a recompute once the merge is done finds the same count
    expect((await recomputeDataFields(recomputeDeps(s.clickhouse), { projectId: keys.projectId, dataFieldIds: [id] })).usersLeft).toBe(0);
    expect((await dataFields('u-merge-pending'))[id]).toBe('5');
  });

  it("a merge between the recompute's read and its write is not undone: the user is read again", async () => {
    const [id] = await dataFieldIds(countOf('merge-applied', 'LAST_7D'));
    await histories(id, 'merge-applied', 'u-merge-applied', 'anon-merge-applied');
    const { held, pageReads, running } = await recomputeHeldAfterFirstRead(id);
    // the merge itself, not a login event's job (whose own profile update would defer the user too)
    const merger = identityMerger({ warehouse: s.clickhouse, profiles: new ProfileStore(s.ctx.redis, s.ctx.keys), log: pino({ level: 'silent' }) });
    await merger.merge(keys.projectId, 'anon-merge-applied', 'u-merge-applied');
    expect((await dataFields('u-merge-applied'))[id]).toBe('5');
    held.open();
    const result = await running;
    expect((await dataFields('u-merge-applied'))[id]).toBe('5'); // not the 3 the first read found
    expect(result).toMatchObject({ usersLeft: 0 });
    expect(pageReads()).toBeGreaterThanOrEqual(2);
  });
});
