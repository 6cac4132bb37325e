import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { eventRowLine, toInteractionRow } from '../../shared/ingestion/event-rows.warehouse.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';
import { decisionRowsChunk } from '../../workers/impact/decisions.processor.js';
import type { Decision, DecisionOutcome } from '../../shared/impact/decisions.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * GetTreatmentReport on a simulated experiment: 20,000 users drawn by a seeded generator, 20 % held out by the holdout
 * bucketing rule, true conversion 10 % (HOLDOUT) vs 12 % (TREATED). Decisions, interactions and
 * events go straight into the ClickHouse tables (as the workers would store them), with noise the
 * report must ignore: decisions outside the period, of another treatment and QA; later decisions
 * of the other group; conversions before the first decision or after the window; other events;
 * interactions outside the period or of another treatment; duplicate rows of retried jobs.
 * The report's groups must equal the bucketing, its counts those computed here, and its
 * interval must contain the true effect.
 */
const USERS = 20_000;
const HOLDOUT_PCT = 20;
const P_HOLDOUT = 0.1;
const P_TREATED = 0.12;
const DAY = 86_400_000;
const WINDOW_DAYS = 7;

let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let treatmentId: string;
let plainTreatmentId: string;
let otherTreatmentId: string;

async function ok(op: string, key: string, body: Record<string, unknown>): Promise<any> {
  const r = await s.post(`/v1/${op}`, { projectId: k.projectId, ...body }, { 'x-api-key': key });
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** First 4 bytes of SHA-256 of `<projectId>:<treatmentId>:<userId>`, big-endian, mod 10,000. */
function heldOut(projectId: string, tid: string, userId: string, pct: number): boolean {
  return createHash('sha256').update(`${projectId}:${tid}:${userId}`, 'utf8').digest().readUInt32BE(0) % 10_000 < pct * 100;
}

beforeAll(async () => {
  // In-process ClickHouse (no workers thread), so the test can write the tables directly.
  s = await startTestService({ WORKERS_THREAD: 'false' });
  k = await projectWithKeys(s, 'report');
  await ok('InsertSurface', k.management, { name: 'home' });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  const purchase = (await ok('InsertEventSchema', k.management, { eventName: 'purchase' })).eventSchema.eventId;
  const insert = async (name: string, extra: Record<string, unknown>) =>
    (
      await ok('InsertTreatment', k.management, {
        name,
        description: name,
        treatmentTypeName: 'card',
        lastModifiedBy: 't',
        startTimestamp: new Date(Date.now() - 60 * DAY).toISOString(),
        shouldPublish: true,
        content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: name }] }] },
        ...extra,
      })
    ).treatment.treatmentId as string;
  treatmentId = await insert('experiment', { targetAction: { eventId: purchase } });
  otherTreatmentId = await insert('other', { targetAction: { eventId: purchase } });
  plainTreatmentId = await insert('no goal', {});
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

interface Expected {
  users: number;
  impressions: number;
  clicks: number;
  conversions: number;
}

describe('GetTreatmentReport', () => {
  it('reports a simulated experiment of 20,000 users exactly, with an interval that contains the true effect', async () => {
    const ch = s.clickhouse;
    const projectId = k.projectId;
    const now = Date.now();
    const start = now - 30 * DAY;
    const end = now - 2 * DAY;
    const rand = seededRandom(20261123);
    const ingest = toClickhouseDateTime64(now);
    const decisions: string[] = [];
    const interactions: string[] = [];
    const events: string[] = [];
    const expected: Record<'TREATED' | 'HOLDOUT', Expected> = {
      TREATED: { users: 0, impressions: 0, clicks: 0, conversions: 0 },
      HOLDOUT: { users: 0, impressions: 0, clicks: 0, conversions: 0 },
    };
    const bucketGroup = new Map<string, 'TREATED' | 'HOLDOUT'>();
    let responseSeq = 0;
    let interactionSeq = 0;

    const decide = (userId: string, tid: string, atMs: number, outcome: DecisionOutcome, dup = false) => {
      const d: Decision = { treatmentId: tid, versionNumber: 1, surface: 'home', rank: outcome === 'RETURNED' || outcome === 'QA' ? 1 : 0, outcome };
      const { chunk } = decisionRowsChunk([{ projectId, userId, responseId: `r${responseSeq++}`, decideTimeMs: atMs, decisions: [d] }], ingest);
      decisions.push(chunk, ...(dup ? [chunk] : []));
    };
    const interact = (userId: string, tid: string, type: string, atMs: number, dup = false) => {
      const line = rowLine(
        'interactions',
        toInteractionRow(
          {
            projectId,
            userId,
            treatmentId: tid,
            treatmentTrackingId: `${tid}_x`,
            surface: 'home',
            interactionType: type,
            interactionTimeMicros: String(atMs * 1000),
          },
          `j:${interactionSeq++}`,
          now,
        ),
      );
      interactions.push(line, ...(dup ? [line] : []));
    };
    const event = (userId: string, name: string, atMs: number) => {
      events.push(eventRowLine({ projectId, userId }, { eventName: name }, atMs, undefined, `j:e${events.length}`, ingest, 'api'));
    };

    for (let n = 0; n < USERS; n++) {
      const userId = `user-${n}`;
      const group = heldOut(projectId, treatmentId, userId, HOLDOUT_PCT) ? 'HOLDOUT' : 'TREATED';
      bucketGroup.set(userId, group);
      const e = expected[group];
      e.users++;
      const first = start + Math.floor(rand() * (end - start - DAY));
      decide(userId, treatmentId, first, group === 'TREATED' ? 'RETURNED' : rand() < 0.1 ? 'GLOBAL_HOLDOUT' : 'HOLDOUT', rand() < 0.05);
      // more decisions later in the period; a few of the other group: the first decision wins
      const more = Math.floor(rand() * 3);
      for (let m = 0; m < more; m++)
        decide(userId, treatmentId, first + 1 + Math.floor(rand() * (end - first - 1)), group === 'TREATED' ? 'RETURNED' : 'HOLDOUT');
      if (rand() < 0.02) decide(userId, treatmentId, first + 1000, group === 'TREATED' ? 'HOLDOUT' : 'RETURNED');
      // the same user in another treatment, and a QA delivery: neither counts here
      if (rand() < 0.1) decide(userId, otherTreatmentId, first, 'RETURNED');
      // interactions in the period count for the group's users; outside it or of another treatment not
      const views = group === 'TREATED' ? Math.floor(rand() * 4) : Math.floor(rand() * 1.2);
      for (let v = 0; v < views; v++) interact(userId, treatmentId, 'VIEWED', first + Math.floor(rand() * (end - first)), rand() < 0.05);
      e.impressions += views;
      if (views > 0 && rand() < 0.3) {
        interact(userId, treatmentId, 'CLICKED', first + Math.floor(rand() * (end - first)));
        e.clicks++;
      }
      if (rand() < 0.05) interact(userId, treatmentId, 'VIEWED', end + Math.floor(rand() * DAY));
      if (rand() < 0.05) interact(userId, treatmentId, 'DISMISSED', first);
      if (rand() < 0.05) interact(userId, otherTreatmentId, 'CLICKED', first);
      // conversion: the target action within the window after the first decision
      if (rand() < (group === 'TREATED' ? P_TREATED : P_HOLDOUT)) {
        event(userId, 'purchase', first + Math.floor(rand() * (WINDOW_DAYS * DAY - 1)));
        if (rand() < 0.3) event(userId, 'purchase', first + Math.floor(rand() * DAY));
        e.conversions++;
      } else {
        const r = rand();
        if (r < 0.05)
          event(userId, 'purchase', first - 1 - Math.floor(rand() * DAY)); // before the decision
        else if (r < 0.1)
          event(userId, 'purchase', first + WINDOW_DAYS * DAY + Math.floor(rand() * DAY)); // after the window
        else if (r < 0.2) event(userId, 'page_view', first + Math.floor(rand() * DAY)); // not the target action
      }
    }
    // users outside the period (before its start, after its end) and QA users are in no group
    for (let n = 0; n < 500; n++) {
      decide(`early-${n}`, treatmentId, start - 1 - Math.floor(rand() * 10 * DAY), 'RETURNED');
      decide(`late-${n}`, treatmentId, end + Math.floor(rand() * DAY), 'HOLDOUT');
      decide(`qa-${n}`, treatmentId, start + Math.floor(rand() * (end - start)), 'QA');
      event(`early-${n}`, 'purchase', start + DAY);
    }
    for (let i = 0; i < decisions.length; i += 20_000) await ch.insertLines('decisions_input', decisions.slice(i, i + 20_000));
    for (let i = 0; i < interactions.length; i += 20_000) await ch.insertLines('interactions', interactions.slice(i, i + 20_000));
    for (let i = 0; i < events.length; i += 20_000) await ch.insertLines('events', events.slice(i, i + 20_000));

    // groups equal the holdout bucketing exactly
    expect(expected.HOLDOUT.users).toBeGreaterThan(USERS * 0.18);
    expect(expected.HOLDOUT.users).toBeLessThan(USERS * 0.22);
    const body = { treatmentId, startTimestamp: new Date(start).toISOString(), endTimestamp: new Date(end).toISOString(), attributionWindowDays: WINDOW_DAYS };
    const t0 = Date.now();
    const { report } = await ok('GetTreatmentReport', k.management, body);
    console.log(`report of ${decisions.length} decisions in ${Date.now() - t0} ms`);
    expect(report.treatmentId).toBe(treatmentId);
    expect(report.conversionEventName).toBe('purchase');
    const byGroup = Object.fromEntries(report.groups.map((g: any) => [g.group, g]));
    expect(report.groups.map((g: any) => g.group)).toEqual(['TREATED', 'HOLDOUT']);
    for (const group of ['TREATED', 'HOLDOUT'] as const) {
      const x = expected[group];
      expect(byGroup[group]).toEqual({
        group,
        users: x.users,
        impressions: x.impressions,
        clicks: x.clicks,
        conversions: x.conversions,
        conversionRate: x.conversions / x.users,
      });
    }
    // the uplift: difference of proportions and its normal-approximation interval
    const p1 = expected.TREATED.conversions / expected.TREATED.users;
    const p0 = expected.HOLDOUT.conversions / expected.HOLDOUT.users;
    const se = Math.sqrt((p1 * (1 - p1)) / expected.TREATED.users + (p0 * (1 - p0)) / expected.HOLDOUT.users);
    expect(report.uplift.absolute).toBeCloseTo(p1 - p0, 12);
    expect(report.uplift.relative).toBeCloseTo((p1 - p0) / p0, 12);
    expect(report.uplift.confidenceInterval95.low).toBeCloseTo(p1 - p0 - 1.96 * se, 4);
    expect(report.uplift.confidenceInterval95.high).toBeCloseTo(p1 - p0 + 1.96 * se, 4);
    const trueEffect = P_TREATED - P_HOLDOUT;
    expect(report.uplift.confidenceInterval95.low).toBeLessThan(trueEffect);
    expect(report.uplift.confidenceInterval95.high).toBeGreaterThan(trueEffect);
    expect(Date.parse(report.computeTime)).toBeGreaterThan(0);

    // a shorter window counts fewer conversions; the default window is 7 days
    const def = (await ok('GetTreatmentReport', k.management, { treatmentId, startTimestamp: body.startTimestamp, endTimestamp: body.endTimestamp })).report;
    expect(def.groups).toEqual(report.groups);
    const short = (await ok('GetTreatmentReport', k.management, { ...body, attributionWindowDays: 1 })).report;
    expect(short.groups[0].conversions).toBeLessThan(report.groups[0].conversions);
    expect(short.groups[0].users).toBe(report.groups[0].users);
  }, 180_000);

  it('without a target action: counts only, no conversions, rates or uplift', async () => {
    const { report } = await ok('GetTreatmentReport', k.management, { treatmentId: plainTreatmentId });
    expect(report).toEqual({
      treatmentId: plainTreatmentId,
      groups: [
        { group: 'TREATED', users: 0, impressions: 0, clicks: 0 },
        { group: 'HOLDOUT', users: 0, impressions: 0, clicks: 0 },
      ],
      computeTime: expect.any(String),
    });
  });

  it('rejects bad input with 400 errors', async () => {
    const bad = async (body: Record<string, unknown>, status: number, field?: string) => {
      const r = await s.post('/v1/GetTreatmentReport', { projectId: k.projectId, ...body }, { 'x-api-key': k.management });
      expect(r.status, JSON.stringify(body)).toBe(status);
      if (field) expect(r.body.error.details.map((d: any) => d.field)).toContain(field);
    };
    await bad({ treatmentId, attributionWindowDays: 0 }, 400, 'attributionWindowDays');
    await bad({ treatmentId, attributionWindowDays: 31 }, 400, 'attributionWindowDays');
    await bad({ treatmentId, startTimestamp: '2026-01-02T00:00:00Z', endTimestamp: '2026-01-01T00:00:00Z' }, 400, 'endTimestamp');
    await bad({ treatmentId, startTimestamp: '2026-02-30T00:00:00Z' }, 400, 'startTimestamp');
    await bad({ treatmentId: 'abc' }, 400);
    await bad({}, 400);
    await bad({ treatmentId: '999999999' }, 404);
    const r = await s.post('/v1/GetTreatmentReport', { projectId: k.projectId, treatmentId }, { 'x-api-key': k.delivery });
    expect(r.status).toBe(403);
  });
});
