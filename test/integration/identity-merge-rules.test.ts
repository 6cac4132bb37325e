import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { parseExposition, sample } from '../helpers/metrics-exposition.js';

/**
 * What an identity merge may do and what follows it, against the whole service (workers in
 * this process, embedded ClickHouse, real Redis):
 * - a merge is an anonymous id joining a signed-in user: a user who has signed in (been the
 *   signed-in side of a merge) is never merged into another one, whoever sends the event; the
 *   refusal is counted; the victim's own later merges still work and erasing the attacker leaves
 *   the victim alone;
 * - after a merge everything keyed by user follows the merged user: GetTreatments with the
 *   pre-login id logs its decisions under the user, buckets holdouts and looks up QA lists as the
 *   user, and ExplainTreatments and PreviewTreatment agree.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let purchases: string;
const DAY = 86_400_000;

const { v1, ok } = v1Calls(
  () => s,
  () => k.projectId,
);
async function profile(userId: string): Promise<any> {
  const r = await s.admin('GetUserProfile', { projectId: k.projectId, userId });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.profile;
}
const event = (eventName: string, insertId: string, extra: Record<string, unknown> = {}) => ({
  eventName,
  clientEventTimestamp: new Date(Date.now() - 1000).toISOString(),
  insertId,
  ...extra,
});
async function log(userId: string, events: Record<string, unknown>[]): Promise<void> {
  await ok('LogEvents', k.logEvents, { userId, events });
}
async function eventRows(userId: string): Promise<number> {
  const rows = await s.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', {
    p: k.projectId,
    u: userId,
  });
  return Number(rows[0].n);
}
async function refusals(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.service.ops.port}/metrics`)).text();
  return sample(parseExposition(text), 'tds_identity_merges_refused_total') ?? 0;
}
/** Every events job queued so far has been processed. */
async function drained(): Promise<void> {
  await waitUntil(
    async () => {
      const c = await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      return c.waiting + c.active + c.delayed + c.prioritized === 0;
    },
    60_000,
    100,
  );
}

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, `idr${Date.now().toString(36)}`);
  await ok('InsertSurface', k.management, { name: 'home' });
  await ok('InsertSurface', k.management, { name: 'side' });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'note',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'side' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  const f = await ok('GetDataFields', k.management, {
    dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
  });
  purchases = f.dataFields[0].dataFieldId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('a merge never lets one user take another', () => {
  it('refuses to merge a signed-in user into another, counts it, and leaves the victim whole', async () => {
    // the victim: signed out, then signed in (a merge: the victim is a signed-in side from now on)
    await log('anon-v1', [event('purchase', 'v-a1')]);
    await log('victim', [event('purchase', 'v-1'), event('login', 'v-l1', { preLoginTempUserId: 'anon-v1' })]);
    await waitUntil(
      async () => (await profile('victim')).mergedFrom?.includes('anon-v1') === true && (await profile('victim')).dataFields[purchases] === '2',
      60_000,
      100,
    );
    await waitUntil(async () => (await eventRows('victim')) === 3, 60_000, 100);
    const before = await refusals();

    // the attack: a LOG_EVENTS key names the victim as its pre-login id
    await log('attacker', [event('purchase', 'x-1', { preLoginTempUserId: 'victim' })]);
    // and names the victim's merged pre-login id too (merged into the victim first: a conflict)
    await log('attacker', [event('purchase', 'x-2', { preLoginTempUserId: 'anon-v1' })]);
    await drained();
    const attacker = await profile('attacker');
    expect(attacker.mergedFrom).toBeUndefined();
    // the attacker's own events are stored under the attacker, without the victim's
    expect(attacker.dataFields[purchases]).toBe('2');
    const victim = await profile('victim');
    expect(victim.mergedInto).toBeUndefined();
    expect(victim.mergedFrom).toEqual(['anon-v1']);
    expect(victim.dataFields[purchases]).toBe('2');
    expect((await profile('anon-v1')).mergedInto).toBe('victim');
    expect(await refusals()).toBe(before + 2);
    // the victim's GetTreatments and events are the victim's own
    await log('victim', [event('purchase', 'v-2')]);
    await waitUntil(async () => (await profile('victim')).dataFields[purchases] === '3', 60_000, 100);
    expect((await profile('attacker')).dataFields[purchases]).toBe('2');

    // the victim signs in on another device: that merge still works
    await log('anon-v2', [event('purchase', 'v-a2')]);
    await waitUntil(async () => (await profile('anon-v2')).dataFields[purchases] === '1', 60_000, 100);
    await log('victim', [event('login', 'v-l2', { preLoginTempUserId: 'anon-v2' })]);
    await waitUntil(async () => (await profile('victim')).mergedFrom?.length === 2, 60_000, 100);
    expect((await profile('victim')).mergedFrom).toEqual(['anon-v1', 'anon-v2']);
    expect((await profile('victim')).dataFields[purchases]).toBe('4');

    // erasing the attacker erases nothing of the victim
    await drained();
    expect(await eventRows('attacker')).toBe(2);
    const victimRows = await eventRows('victim');
    expect(victimRows).toBe(6);
    expect(await v1('DeleteUserData', k.management, { userId: 'attacker' })).toEqual({ status: 200, body: {} });
    await waitUntil(async () => (await eventRows('attacker')) === 0, 60_000, 200);
    expect(await eventRows('victim')).toBe(victimRows);
    expect((await profile('victim')).dataFields[purchases]).toBe('4');
    expect((await profile('victim')).mergedFrom).toEqual(['anon-v1', 'anon-v2']);
    expect((await profile('anon-v1')).mergedInto).toBe('victim');
  }, 240_000);

  it('of two events naming each other as pre-login ids, at most one merges, and the merged id then stands for the other', async () => {
    await log('p-one', [event('purchase', 'p1-1', { preLoginTempUserId: 'p-two' })]);
    await log('p-two', [event('purchase', 'p2-1', { preLoginTempUserId: 'p-one' })]);
    await drained();
    const [one, two] = [await profile('p-one'), await profile('p-two')];
    // processed one after the other, the first makes the second's user its pre-login id; processed
    // at once (one merged job), each finds the other already signed in and both are refused
    expect(one.mergedInto === undefined || two.mergedInto === undefined).toBe(true);
    const merged = one.mergedFrom?.includes('p-two') ? one : two.mergedFrom?.includes('p-one') ? two : undefined;
    if (merged) expect(merged.dataFields[purchases]).toBe('2');
    else expect([one.dataFields[purchases], two.dataFields[purchases]]).toEqual(['1', '1']);
  }, 120_000);
});

describe('after a merge, everything keyed by user follows the merged user', () => {
  const bucket = (key: string) => createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;

  it('decisions are logged under the user; holdout buckets and QA lists are the user’s; Explain and Preview agree', async () => {
    const treatment = async (fields: Record<string, unknown>) =>
      (
        await ok('InsertTreatment', k.management, {
          description: 'd',
          treatmentTypeName: 'card',
          lastModifiedBy: 't',
          startTimestamp: new Date(Date.now() - DAY).toISOString(),
          content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: String(fields.name) }] },
          ...fields,
        })
      ).treatment.treatmentId as string;
    const held = await treatment({ name: 'held', shouldPublish: true, holdoutPercentage: 50 });
    // on a surface where nothing depends on who the user is: delivery reads nothing about the user
    const plain = await treatment({ name: 'plain', treatmentTypeName: 'note', shouldPublish: true });
    // a user held out of `held` whose pre-login id, on its own, is not
    const n = Array.from({ length: 400 }, (_, i) => i);
    const U = `signed-${n.find((i) => bucket(`${k.projectId}:${held}:signed-${i}`) < 5000)}`;
    const T = `anon-${n.find((i) => bucket(`${k.projectId}:${held}:anon-${i}`) >= 5000)}`;
    const forUser = await treatment({ name: 'qa of the user', qaUserIds: [U] });
    const forTemp = await treatment({ name: 'qa of the pre-login id', qaUserIds: [T] });
    const get = async (userId: string) => ok('GetTreatments', k.delivery, { userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] });
    const ids = (r: any) => (r.userTreatments ?? []).map((u: any) => u.treatmentId);

    // before the merge the pre-login id is its own user
    expect(ids(await get(T))).toEqual([forTemp, held]);
    expect(ids(await get(U))).toEqual([forUser]);

    await log(T, [event('purchase', 't-1')]);
    await log(U, [event('login', 'u-l', { preLoginTempUserId: T })]);
    await waitUntil(async () => (await profile(U)).mergedFrom?.includes(T) === true, 60_000, 100);

    // the pre-login id is now decided as the user: the user's QA list, the user's holdout bucket
    const r = await get(T);
    expect(ids(r)).toEqual([forUser]);
    const decisions = async (userId: string) =>
      (await ok('ListDecisions', k.management, { userId, limit: 100 })).decisions.filter((d: any) => d.responseId === r.responseId);
    await waitUntil(async () => (await decisions(U)).length === 2, 60_000, 100);
    expect((await decisions(U)).map((d: any) => [d.treatmentId, d.outcome]).sort()).toEqual(
      [
        [forUser, 'QA'],
        [held, 'HOLDOUT'],
      ].sort(),
    );
    expect(await decisions(T)).toEqual([]);
    // where delivery read nothing about the user, the decision-log workers put the decision under the user
    const side = await ok('GetTreatments', k.delivery, { userId: T, surfaces: [{ surface: 'side' }] });
    expect(ids(side)).toEqual([plain]);
    const sideDecisions = async (userId: string) =>
      (await ok('ListDecisions', k.management, { userId, limit: 100 })).decisions.filter((d: any) => d.responseId === side.responseId);
    await waitUntil(async () => (await sideDecisions(U)).length === 1, 60_000, 100);
    expect((await sideDecisions(U))[0]).toMatchObject({ treatmentId: plain, outcome: 'RETURNED' });
    expect(await sideDecisions(T)).toEqual([]);

    // ExplainTreatments and PreviewTreatment with the pre-login id say the same
    const explained = (await ok('ExplainTreatments', k.management, { userId: T, surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] })).explanation
      .surfaces[0].treatments;
    const verdict = (id: string) => explained.find((t: any) => t.treatmentId === id);
    expect(verdict(forUser)).toMatchObject({ returned: true, outcome: 'QA' });
    expect(verdict(forTemp).returned).toBe(false);
    expect(verdict(held)).toMatchObject({ returned: false, reasons: ['HELD_OUT'] });
    const preview = await ok('PreviewTreatment', k.management, { treatmentId: held, userId: T });
    expect(preview.eligibility).toMatchObject({ heldOut: true, eligible: false });
  }, 240_000);
});
