import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileCatalogPlan, type CatalogPlan } from '../../shared/delivery/catalog-plan.js';
import { holdoutBucket, selectTreatments, type DeliveryRequest } from '../../shared/delivery/index.js';
import {
  applyUpdate,
  deleteTreatment,
  treatmentStatus,
  type Content,
  type TreatmentRecord,
  type TreatmentVersionRecord,
} from '../../shared/treatments/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';
import { fixed, HOUR, iso, NOW, PROJECT, SURFACES, version } from '../helpers/delivery-plan.js';

function type(id: string, name: string, surfaces: string[]): TreatmentType {
  return {
    treatmentTypeId: id,
    projectId: PROJECT,
    treatmentTypeName: name,
    deliveryType: 'IN_APP',
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: false, dataType: 'STRING' }],
    surfaces,
    lastModifiedBy: 't',
    lastModifiedTimestamp: iso(NOW),
    createTime: iso(NOW),
  };
}
const BANNER = type('1', 'banner', ['home', 'inbox']);

function content(title = 'Hello'): Content {
  return { contentByLanguage: [], languageAgnosticContentFields: [{ fieldName: 'title', stringValue: title }] };
}

function treatment(id: string, opts: Partial<TreatmentRecord> & { versionsIn?: Partial<TreatmentVersionRecord>[] } = {}): TreatmentRecord {
  const { versionsIn, ...rest } = opts;
  return {
    treatmentId: id,
    projectId: PROJECT,
    name: `t${id}`,
    description: '',
    treatmentTypeId: '1',
    paused: false,
    lastModifiedBy: 't',
    lastModifiedTimestamp: iso(NOW),
    modificationSource: 'API',
    createTime: iso(NOW),
    // the content of this file's type: one language-agnostic title
    versions: (versionsIn ?? [{}]).map((v, i) => version({ versionNumber: i + 1, content: content(), ...v })),
    ...rest,
  };
}

function plan(treatments: TreatmentRecord[], extra: { globalHoldoutPercentage?: number } = {}): CatalogPlan {
  return compileCatalogPlan({ projectId: PROJECT, treatments, types: [BANNER], surfaces: SURFACES, dataFields: [], ...extra });
}

const NO_PROFILE: StoredProfile = { userProperties: {}, fields: {} };

function run(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; now?: number; scores?: Record<string, number> } = {}) {
  const req: DeliveryRequest = { projectId: PROJECT, userId: 'u1', surfaces: [{ surface: 'home' }], ...r };
  return selectTreatments(p, req, opts.profile ?? NO_PROFILE, fixed(opts.scores), opts.now ?? NOW, 'resp1');
}

function runExplain(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; now?: number } = {}) {
  const req: DeliveryRequest = { projectId: PROJECT, userId: 'u1', surfaces: [{ surface: 'home' }], ...r };
  return selectTreatments(p, req, opts.profile ?? NO_PROFILE, fixed(), opts.now ?? NOW, 'resp1', { explain: true });
}

/** The holdout bucket (first 4 bytes of SHA-256, big-endian, mod 10,000), computed independently of the service's code. */
function bucketOf(key: string): number {
  return createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;
}

// ------------------------------------------------------------------------------------------------

describe('decisions', () => {
  it('lists one RETURNED decision per returned treatment with its rank and served version', () => {
    const p = plan([
      treatment('1'),
      treatment('2', {
        versionsIn: [
          { publishTime: iso(NOW - 3 * HOUR), endTimestamp: iso(NOW - HOUR) },
          { publishTime: iso(NOW - HOUR), startTimestamp: iso(NOW - HOUR) },
        ],
      }),
    ]);
    const r = run(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] }, { scores: { '2': 1 } });
    expect(r.decisions).toEqual([
      { treatmentId: '2', versionNumber: 2, surface: 'home', rank: 1, outcome: 'RETURNED' },
      { treatmentId: '1', versionNumber: 1, surface: 'home', rank: 2, outcome: 'RETURNED' },
    ]);
  });

  it('is empty when nothing is returned', () => {
    expect(run(plan([])).decisions).toEqual([]);
  });
});

describe('holdouts', () => {
  it('buckets by the first 4 bytes of SHA-256, mod 10,000 (fixed vectors)', () => {
    for (const [key, bucket] of [
      ['p1:1:u1', 5270],
      ['p1:global:u1', 3502],
      ['p1:1:alice', 1864],
      ['p1:global:bob', 6074],
      ['p1:1:ü', 5962],
    ] as const) {
      expect(holdoutBucket(key)).toBe(bucket);
      expect(bucketOf(key)).toBe(bucket);
    }
  });

  it('holds a user out exactly when the bucket is below percentage × 100, and the next treatment takes the place', () => {
    const p = plan([treatment('1', { holdoutPercentage: 37.25 }), treatment('2')]);
    let heldOut = 0;
    for (let i = 0; i < 2000; i++) {
      const userId = `user-${i}`;
      const r = run(p, { userId }, { scores: { '1': 1 } });
      const expectHeld = bucketOf(`p1:1:${userId}`) < 3725;
      if (expectHeld) heldOut++;
      expect(r.response.userTreatments?.map((u) => u.treatmentId)).toEqual([expectHeld ? '2' : '1']);
      expect(r.decisions).toEqual(
        expectHeld
          ? [
              { treatmentId: '1', versionNumber: 1, surface: 'home', rank: 0, outcome: 'HOLDOUT' },
              { treatmentId: '2', versionNumber: 1, surface: 'home', rank: 1, outcome: 'RETURNED' },
            ]
          : [{ treatmentId: '1', versionNumber: 1, surface: 'home', rank: 1, outcome: 'RETURNED' }],
      );
    }
    expect(heldOut / 2000).toBeGreaterThan(0.32);
    expect(heldOut / 2000).toBeLessThan(0.42);
  });

  it('logs HOLDOUT only for a treatment that would have been returned', () => {
    const p = plan([treatment('1', { holdoutPercentage: 100 }), treatment('2')]);
    // treatment 2 scores higher and takes the only place: 1 would not have been returned anyway
    expect(run(p, {}, { scores: { '2': 1 } }).decisions).toEqual([{ treatmentId: '2', versionNumber: 1, surface: 'home', rank: 1, outcome: 'RETURNED' }]);
  });

  it('gives a globally held-out user nothing and logs what would have been returned as GLOBAL_HOLDOUT', () => {
    const p = plan([treatment('1'), treatment('2')], { globalHoldoutPercentage: 20 });
    let held = 0;
    for (let i = 0; i < 1000; i++) {
      const userId = `g-${i}`;
      const r = run(p, { userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] });
      if (bucketOf(`p1:global:${userId}`) < 2000) {
        held++;
        expect(r.response).toEqual({ responseId: 'resp1' });
        expect(r.decisions).toEqual([
          { treatmentId: '1', versionNumber: 1, surface: 'home', rank: 0, outcome: 'GLOBAL_HOLDOUT' },
          { treatmentId: '2', versionNumber: 1, surface: 'home', rank: 0, outcome: 'GLOBAL_HOLDOUT' },
        ]);
      } else {
        expect(r.response.userTreatments).toHaveLength(2);
        expect(r.decisions.map((d) => d.outcome)).toEqual(['RETURNED', 'RETURNED']);
      }
    }
    expect(held).toBeGreaterThan(150);
    expect(held).toBeLessThan(250);
  });

  it('explains held out and globally held out', () => {
    const heldUser = Array.from({ length: 200 }, (_, i) => `x${i}`).find((u) => bucketOf(`p1:1:${u}`) < 5000)!;
    const e = runExplain(plan([treatment('1', { holdoutPercentage: 50 })]), { userId: heldUser }).explanation!;
    expect(e.surfaces[0]!.treatments[0]).toMatchObject({ treatmentId: '1', returned: false, outcome: 'held out', reasons: ['HELD_OUT'] });
    const globalUser = Array.from({ length: 200 }, (_, i) => `x${i}`).find((u) => bucketOf(`p1:global:${u}`) < 5000)!;
    const g = runExplain(plan([treatment('1')], { globalHoldoutPercentage: 50 }), { userId: globalUser }).explanation!;
    expect(g.surfaces[0]!.treatments[0]).toMatchObject({ treatmentId: '1', returned: false, outcome: 'globally held out', reasons: ['GLOBAL_HOLDOUT'] });
  });
});

describe('QA users', () => {
  const draft = { publishTime: undefined };
  const rules = {
    eligibilityRules: [{ dataFieldId: '99', condition: 'EQUALS' as const, rhsValue: 'x', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE' as const }],
  };

  it('gives a QA user the newest version, a DRAFT, at rank 1, logged QA; nobody else gets it', () => {
    const p = plan([treatment('5', { qaUserIds: ['qa1'], versionsIn: [{}, { ...draft, content: content('new') }] }), treatment('1')]);
    const qa = run(p, { userId: 'qa1', surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] });
    expect(qa.response.userTreatments!.map((u) => [u.treatmentId, u.rank, u.treatmentContent])).toEqual([
      ['5', '1', JSON.stringify({ title: 'new' })],
      ['1', '2', JSON.stringify({ title: 'Hello' })],
    ]);
    expect(qa.decisions[0]).toEqual({ treatmentId: '5', versionNumber: 2, surface: 'home', rank: 1, outcome: 'QA' });
    const other = run(p, { userId: 'u2', surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] }, { scores: { '5': 1 } });
    // the others get the LIVE version 1, never the draft
    expect(other.response.userTreatments!.map((u) => [u.treatmentId, u.treatmentContent])).toEqual([
      ['5', JSON.stringify({ title: 'Hello' })],
      ['1', JSON.stringify({ title: 'Hello' })],
    ]);
    expect(other.decisions.map((d) => d.outcome)).toEqual(['RETURNED', 'RETURNED']);
  });

  it('serves DRAFT-only, SCHEDULED and PAUSED treatments to QA users but not ARCHIVED ones', () => {
    const p = plan([
      treatment('1', { qaUserIds: ['qa'], versionsIn: [draft] }),
      treatment('2', { qaUserIds: ['qa'], versionsIn: [{ startTimestamp: iso(NOW + HOUR) }] }),
      treatment('3', { qaUserIds: ['qa'], paused: true }),
      treatment('4', { qaUserIds: ['qa'], versionsIn: [{ endTimestamp: iso(NOW - HOUR) }] }),
    ]);
    const r = run(p, { userId: 'qa', surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] });
    expect(r.response.userTreatments!.map((u) => u.treatmentId)).toEqual(['1', '2', '3']);
    expect(r.decisions.every((d) => d.outcome === 'QA')).toBe(true);
    expect(run(p, { userId: 'someone', surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] }).response.userTreatments).toBeUndefined();
  });

  it('serves no ARCHIVED treatment to QA users, even when its newest version is a draft edited after it was deleted or ran out', () => {
    const live = treatment('1', { qaUserIds: ['qa'] });
    // deleted (every version ended), then edited: the edit is a new draft, the treatment stays ARCHIVED
    const deleted = applyUpdate(deleteTreatment(live, 't', NOW - HOUR), { lastModifiedBy: 't', content: content('after delete') }, NOW - HOUR / 2).treatment;
    expect(deleted.versions.map((v) => v.publishTime === undefined)).toEqual([false, true]);
    expect(treatmentStatus(deleted, NOW)).toBe('ARCHIVED');
    // ran out by time, then edited
    const ended = applyUpdate(
      treatment('2', { qaUserIds: ['qa'], versionsIn: [{ endTimestamp: iso(NOW - HOUR) }] }),
      { lastModifiedBy: 't', content: content('after end') },
      NOW - HOUR / 2,
    ).treatment;
    expect(treatmentStatus(ended, NOW)).toBe('ARCHIVED');
    // a draft added to a LIVE treatment is still served to QA users (the control)
    const edited = applyUpdate(
      treatment('3', { qaUserIds: ['qa'] }),
      { lastModifiedBy: 't', content: content('draft of a live one') },
      NOW - HOUR / 2,
    ).treatment;
    const p = plan([deleted, ended, edited]);
    const r = run(p, { userId: 'qa', surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] });
    expect(r.response.userTreatments!.map((u) => [u.treatmentId, u.treatmentContent])).toEqual([['3', JSON.stringify({ title: 'draft of a live one' })]]);
    const e = runExplain(p, { userId: 'qa', surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] }).explanation!;
    expect(e.surfaces[0]!.treatments.filter((t) => t.returned).map((t) => t.treatmentId)).toEqual(['3']);
  });

  it('ignores rules, holdouts, caps and mutual exclusion for QA users; respects surfaces and removed surfaces', () => {
    const p = plan(
      [
        treatment('1', {
          qaUserIds: ['qa'],
          holdoutPercentage: 100,
          mutualExclusionGroupId: 'g',
          frequencyCap: { maxCount: 1, windowName: 'LAST_1D', countOf: 'VIEWED' },
          versionsIn: [{ ...rules, removedSurfaces: ['inbox'] }],
        }),
        treatment('2', { qaUserIds: ['qa'], mutualExclusionGroupId: 'g' }),
      ],
      { globalHoldoutPercentage: 100 },
    );
    const profile: StoredProfile = { userProperties: {}, fields: { [`cap:v:1:${Math.floor(NOW / 86_400_000)}`]: '7' } };
    const r = run(p, { userId: 'qa', surfaces: [{ surface: 'home' }, { surface: 'inbox' }] }, { profile });
    expect(r.response.userTreatments!.map((u) => `${u.surface}:${u.treatmentId}:${u.rank}`)).toEqual(['home:1:1', 'home:2:2', 'inbox:2:1']);
  });

  it('explains QA deliveries', () => {
    const e = runExplain(plan([treatment('1', { qaUserIds: ['qa'], versionsIn: [draft] })]), { userId: 'qa' }).explanation!;
    expect(e.surfaces[0]!.treatments[0]).toMatchObject({ treatmentId: '1', returned: true, rank: '1', outcome: 'QA', servedVersionNumber: 1 });
  });
});

describe('fallback', () => {
  it('fills a surface only when nothing else would be returned there; obeys its own dates; logged RETURNED', () => {
    const p = plan([
      treatment('1', { isFallback: true }),
      treatment('2', { versionsIn: [{ removedSurfaces: ['inbox'] }] }),
      treatment('3', { isFallback: true, versionsIn: [{ startTimestamp: iso(NOW + HOUR) }] }),
    ]);
    const r = run(p, { surfaces: [{ surface: 'home' }, { surface: 'inbox' }] }, { scores: { '1': 5 } });
    expect(r.response.userTreatments!.map((u) => `${u.surface}:${u.treatmentId}:${u.rank}`)).toEqual(['home:2:1', 'inbox:1:1']);
    expect(r.decisions.map((d) => d.outcome)).toEqual(['RETURNED', 'RETURNED']);
    // later: treatment 3 is live too, and on an empty surface the fallbacks are ranked among themselves
    expect(
      run(p, { surfaces: [{ surface: 'inbox', maximumTreatmentCount: 3 }] }, { now: NOW + 2 * HOUR, scores: { '3': 1 } }).response.userTreatments!.map(
        (u) => u.treatmentId,
      ),
    ).toEqual(['3', '1']);
  });

  it('is never held out, and fills the place a held-out treatment left empty', () => {
    const p = plan([treatment('1', { isFallback: true, holdoutPercentage: 100 }), treatment('2', { holdoutPercentage: 100 })]);
    const r = run(p);
    expect(r.response.userTreatments!.map((u) => u.treatmentId)).toEqual(['1']);
    expect(r.decisions).toEqual([
      { treatmentId: '2', versionNumber: 1, surface: 'home', rank: 0, outcome: 'HOLDOUT' },
      { treatmentId: '1', versionNumber: 1, surface: 'home', rank: 1, outcome: 'RETURNED' },
    ]);
  });

  it('explains fallback and FALLBACK_NOT_NEEDED', () => {
    const p = plan([treatment('1', { isFallback: true }), treatment('2')]);
    expect(runExplain(p).explanation!.surfaces[0]!.treatments.find((x) => x.treatmentId === '1')).toMatchObject({
      returned: false,
      reasons: ['FALLBACK_NOT_NEEDED'],
      outcome: 'not returned',
    });
    const alone = plan([treatment('1', { isFallback: true }), treatment('2', { paused: true })]);
    expect(runExplain(alone).explanation!.surfaces[0]!.treatments.find((x) => x.treatmentId === '1')).toMatchObject({
      returned: true,
      rank: '1',
      outcome: 'fallback',
    });
  });
});

describe('frequency caps', () => {
  const DAY = 86_400_000;
  const today = Math.floor(NOW / DAY);
  const capped = (countOf: 'VIEWED' | 'RETURNED' = 'VIEWED') => treatment('1', { frequencyCap: { maxCount: 3, windowName: 'LAST_7D', countOf } });
  const profileOf = (fields: Record<string, string>): StoredProfile => ({ userProperties: {}, fields });

  it('counts the counters of the last n UTC days, today included, and stops the treatment at maxCount', () => {
    const p = plan([capped(), treatment('2')]);
    const under = profileOf({ [`cap:v:1:${today}`]: '1', [`cap:v:1:${today - 6}`]: '1', [`cap:v:1:${today - 7}`]: '5' });
    expect(run(p, {}, { profile: under, scores: { '1': 1 } }).response.userTreatments!.map((u) => u.treatmentId)).toEqual(['1']);
    const reached = profileOf({ [`cap:v:1:${today}`]: '2', [`cap:v:1:${today - 3}`]: '1' });
    expect(run(p, {}, { profile: reached, scores: { '1': 1 } }).response.userTreatments!.map((u) => u.treatmentId)).toEqual(['2']);
    // a week later the window has passed
    expect(run(p, {}, { profile: reached, scores: { '1': 1 }, now: NOW + 7 * DAY }).response.userTreatments!.map((u) => u.treatmentId)).toEqual(['1']);
  });

  it('counts the kind the cap names', () => {
    const p = plan([capped('RETURNED')]);
    expect(run(p, {}, { profile: profileOf({ [`cap:v:1:${today}`]: '9' }) }).response.userTreatments).toHaveLength(1);
    expect(run(p, {}, { profile: profileOf({ [`cap:r:1:${today}`]: '3' }) }).response.userTreatments).toBeUndefined();
  });

  it('explains "capped: 3 of 3 VIEWED in LAST_7D", and a capped treatment needs the profile', async () => {
    const p = plan([capped()]);
    const e = runExplain(p, {}, { profile: profileOf({ [`cap:v:1:${today}`]: '3' }) }).explanation!;
    expect(e.surfaces[0]!.treatments[0]).toMatchObject({ returned: false, reasons: ['FREQUENCY_CAPPED'], outcome: 'capped: 3 of 3 VIEWED in LAST_7D' });
    const { prepareRequest, requestNeedsProfile } = await import('../../shared/delivery/index.js');
    const req: DeliveryRequest = { projectId: PROJECT, userId: 'u1', surfaces: [{ surface: 'home' }] };
    expect(requestNeedsProfile(p, prepareRequest(p, req), NOW)).toBe(true);
    const q = plan([treatment('1')]);
    expect(requestNeedsProfile(q, prepareRequest(q, req), NOW)).toBe(false);
  });
});

describe('VIEWED cap counters (interactions path)', () => {
  it('adds one to the day of the interaction, only for VIEWED of a treatment with a VIEWED cap', async () => {
    const { viewCapOps } = await import('../../workers/delivery/cap-counters.js');
    const job = (interactionType: string, treatmentId = '7') => ({
      kind: 'interaction' as const,
      projectId: PROJECT,
      userId: 'u',
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r`,
      surface: 'home',
      interactionType,
      interactionTimeMicros: String(NOW * 1000),
      receivedAt: NOW,
    });
    const capped = new Set(['7']);
    expect(viewCapOps(capped, job('VIEWED'))).toEqual([['inc', `cap:v:7:${Math.floor(NOW / 86_400_000)}`, 1]]);
    expect(viewCapOps(capped, job('CLICKED'))).toEqual([]);
    expect(viewCapOps(capped, job('VIEWED', '8'))).toEqual([]);
  });
});
