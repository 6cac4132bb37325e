import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/**
 * IDENTITY_MERGE=off, for apps whose user ids are all signed-in ids: an event carrying
 * `preLoginTempUserId` is stored under its user and merges nothing; both ids stay users of their
 * own (profiles, rows in ClickHouse, GetTreatments). The whole service in this process.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let purchases: string;

const { ok } = v1Calls(
  () => s,
  () => k.projectId,
);
async function profile(userId: string): Promise<any> {
  const r = await s.admin('GetUserProfile', { projectId: k.projectId, userId });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.profile;
}
async function eventRows(userId: string): Promise<number> {
  const rows = await s.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', {
    p: k.projectId,
    u: userId,
  });
  return Number(rows[0].n);
}
const purchase = (insertId: string, extra: Record<string, unknown> = {}) => ({
  eventName: 'purchase',
  clientEventTimestamp: new Date(Date.now() - 1000).toISOString(),
  insertId,
  ...extra,
});

beforeAll(async () => {
  s = await startTestService({ IDENTITY_MERGE: 'off' });
  k = await projectWithKeys(s, `idoff${Date.now().toString(36)}`);
  const f = await ok('GetDataFields', k.management, {
    dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
  });
  purchases = f.dataFields[0].dataFieldId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('IDENTITY_MERGE=off', () => {
  it('stores an event carrying preLoginTempUserId under its user and merges nothing', async () => {
    expect(s.ctx.config.identityMerge).toBe(false);
    await ok('LogEvents', k.logEvents, { userId: 'bob', events: [purchase('b1'), purchase('b2')] });
    await waitUntil(async () => (await profile('bob')).dataFields[purchases] === '2', 60_000, 100);
    await ok('LogEvents', k.logEvents, { userId: 'carol', events: [purchase('c1', { preLoginTempUserId: 'bob' })] });
    await waitUntil(async () => (await profile('carol')).dataFields[purchases] === '1', 60_000, 100);
    await waitUntil(async () => (await eventRows('carol')) === 1, 60_000, 100);
    const [bob, carol] = [await profile('bob'), await profile('carol')];
    expect(bob.mergedInto).toBeUndefined();
    expect(bob.dataFields[purchases]).toBe('2');
    expect(carol.mergedFrom).toBeUndefined();
    expect(await eventRows('bob')).toBe(2);
    // nothing of a merge was written: no alias, no signed-in mark
    expect(await s.ctx.redis.hget(s.ctx.keys.profile(k.projectId, 'bob'), '@alias')).toBeNull();
    expect(await s.ctx.redis.hget(s.ctx.keys.profile(k.projectId, 'carol'), '@signedIn')).toBeNull();
  }, 120_000);
});
