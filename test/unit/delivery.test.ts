import { describe, expect, it } from 'vitest';
import { compileCatalogPlan, plannedTreatmentStatus, servedPlannedVersion, type CatalogPlan } from '../../shared/delivery/catalog-plan.js';
import { prepareRequest, requestNeedsProfile, selectTreatments, type DeliveryRequest, type Ranking, type TreatmentExplanation } from '../../shared/delivery/index.js';
import { EMPTY_STATS_VIEW, type RankingPolicy } from '../../shared/delivery/ranking/ranking-policy.js';
import { servedVersion, treatmentStatus } from '../../shared/treatments/treatment-status.js';
import type { Content, EligibilityRule, TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import { InvalidArgumentError } from '../../shared/platform/errors.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';

const NOW = Date.parse('2024-06-15T12:00:00Z');
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const PROJECT = 'p1';
const SURFACES = ['home', 'inbox', 'checkout'];

// ------------------------------------------------------------------------------------------------
// Fixtures

function type(id: string, name: string, surfaces: string[], perLanguage = true): TreatmentType {
  return {
    treatmentTypeId: id,
    projectId: PROJECT,
    treatmentTypeName: name,
    deliveryType: 'IN_APP',
    contentFieldTypes: [
      { fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: perLanguage, dataType: 'STRING' },
      { fieldName: 'link', maximumLengthAllowed: 100, isPerLanguage: false, dataType: 'STRING' },
    ],
    surfaces,
    lastModifiedBy: 't',
    lastModifiedTimestamp: iso(NOW),
    createTime: iso(NOW),
  };
}

const BANNER = type('1', 'banner', ['home', 'inbox']);
const CARD = type('2', 'card', ['checkout']);
const PLAIN = type('3', 'plain', ['home'], false);

function content(titles: Record<string, string> = { en: 'Hello' }, link = 'https://x/1'): Content {
  return {
    contentByLanguage: Object.entries(titles).map(([languageCode, title]) => ({ languageCode: { languageCode }, contentFields: [{ fieldName: 'title', stringValue: title }] })),
    languageAgnosticContentFields: [{ fieldName: 'link', stringValue: link }],
  };
}

function version(v: Partial<TreatmentVersionRecord> = {}): TreatmentVersionRecord {
  return {
    versionNumber: 1,
    publishTime: iso(NOW - 2 * HOUR),
    startTimestamp: iso(NOW - 2 * HOUR),
    tags: [],
    content: content(),
    eligibilityRules: [],
    removedSurfaces: [],
    createTime: iso(NOW - 3 * HOUR),
    lastModifiedTimestamp: iso(NOW - 3 * HOUR),
    ...v,
  };
}

function treatment(id: string, typeId = '1', opts: { paused?: boolean; group?: string; versions?: Partial<TreatmentVersionRecord>[] } = {}): TreatmentRecord {
  return {
    treatmentId: id,
    projectId: PROJECT,
    name: `t${id}`,
    description: '',
    treatmentTypeId: typeId,
    mutualExclusionGroupId: opts.group,
    paused: opts.paused ?? false,
    lastModifiedBy: 't',
    lastModifiedTimestamp: iso(NOW),
    modificationSource: 'API',
    createTime: iso(NOW),
    versions: (opts.versions ?? [{}]).map((v, i) => version({ versionNumber: i + 1, ...v })),
  };
}

const FIELDS: DataFieldRecord[] = [
  { dataFieldId: '10', projectId: PROJECT, name: 'age', dataFieldType: 'INTEGER', createTime: iso(NOW) },
  { dataFieldId: '11', projectId: PROJECT, name: 'tier', dataFieldType: 'STRING', createTime: iso(NOW) },
  { dataFieldId: '12', projectId: PROJECT, name: 'vip', dataFieldType: 'BOOLEAN', createTime: iso(NOW) },
];

function rule(dataFieldId: string, condition: EligibilityRule['condition'], rhsValue: string, dataMissingBehaviour: EligibilityRule['dataMissingBehaviour'] = 'EVALUATE_TO_INELIGIBLE'): EligibilityRule {
  return { dataFieldId, condition, rhsValue, dataMissingBehaviour };
}

function plan(treatments: TreatmentRecord[], types: TreatmentType[] = [BANNER, CARD, PLAIN]): CatalogPlan {
  return compileCatalogPlan({ projectId: PROJECT, treatments, types, surfaces: SURFACES, dataFields: FIELDS });
}

/** Deterministic ranking: a fixed score per treatment (default 0; ties go to the lower id). */
function fixed(scores: Record<string, number> = {}): Ranking {
  const policy: RankingPolicy = { name: 'fixed', score: (ctx) => scores[ctx.treatmentId] ?? 0 };
  return { policy, stats: EMPTY_STATS_VIEW };
}

const NO_PROFILE: StoredProfile = { userProperties: {}, fields: {} };

function request(r: Partial<DeliveryRequest> = {}): DeliveryRequest {
  return { projectId: PROJECT, userId: 'u1', surfaces: [{ surface: 'home' }], ...r };
}

function run(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; ranking?: Ranking; now?: number } = {}) {
  return selectTreatments(p, request(r), opts.profile ?? NO_PROFILE, opts.ranking ?? fixed(), opts.now ?? NOW, 'resp1');
}

function returned(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: Parameters<typeof run>[2] = {}): string[] {
  return (run(p, r, opts).response.userTreatments ?? []).map((u) => `${u.surface}:${u.treatmentId}`);
}

function explain(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; ranking?: Ranking; now?: number } = {}) {
  return selectTreatments(p, request(r), opts.profile ?? NO_PROFILE, opts.ranking ?? fixed(), opts.now ?? NOW, 'resp1', { explain: true }).explanation!;
}

function explained(p: CatalogPlan, surface: string, treatmentId: string, r: Partial<DeliveryRequest> = {}, opts: Parameters<typeof explain>[2] = {}): TreatmentExplanation {
  const e = explain(p, r, opts).surfaces.find((s) => s.surface === surface)!;
  return e.treatments.find((t) => t.treatmentId === treatmentId)!;
}

function badRequest(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as InvalidArgumentError).details.map((d) => d.field);
  }
  throw new Error('expected a 400');
}

// ------------------------------------------------------------------------------------------------

describe('the response', () => {
  it('renders a UserTreatment with rank, tracking id, type name, language and a JSON content string', () => {
    const r = run(plan([treatment('7')]));
    expect(r.response).toEqual({
      responseId: 'resp1',
      userTreatments: [
        {
          treatmentId: '7',
          treatmentTrackingId: '7_resp1',
          surface: 'home',
          rank: '1',
          treatmentType: 'banner',
          treatmentContent: JSON.stringify({ link: 'https://x/1', title: 'Hello' }),
          contentLanguageCode: 'en',
        },
      ],
    });
  });

  it('holds only responseId, with no userTreatments key, when nothing qualifies', () => {
    const r = run(plan([treatment('7')]), { languageCode: 'fr' });
    expect(r.response).toEqual({ responseId: 'resp1' });
    expect('userTreatments' in r.response).toBe(false);
  });
});

describe('counts (D28)', () => {
  const three = plan([treatment('1'), treatment('2'), treatment('3')]);
  const ranking = fixed({ '1': 0.2, '2': 0.9, '3': 0.5 });

  it('returns one treatment per surface by default: the best ranked', () => {
    expect(returned(three, {}, { ranking })).toEqual(['home:2']);
  });

  it('uses the top-level maximumTreatmentCount as every surface’s default, ranks 1..n in score order', () => {
    const r = run(three, { maximumTreatmentCount: 2, surfaces: [{ surface: 'home' }] }, { ranking });
    expect(r.response.userTreatments!.map((u) => [u.treatmentId, u.rank])).toEqual([
      ['2', '1'],
      ['3', '2'],
    ]);
  });

  it('lets a surface’s own maximum override the top-level one (int64 strings accepted)', () => {
    expect(returned(three, { maximumTreatmentCount: 1, surfaces: [{ surface: 'home', maximumTreatmentCount: '3' }] }, { ranking })).toEqual(['home:2', 'home:3', 'home:1']);
    expect(returned(three, { maximumTreatmentCount: 3, surfaces: [{ surface: 'home', maximumTreatmentCount: 0 }] }, { ranking })).toEqual([]);
  });

  it('gives a surface none at all when fewer than its minimum qualify, and does not affect other surfaces', () => {
    const p = plan([treatment('1'), treatment('2'), treatment('5', '2')]);
    const r = { surfaces: [{ surface: 'home', maximumTreatmentCount: 5, minimumTreatmentCount: 3 }, { surface: 'checkout' }] };
    expect(returned(p, r)).toEqual(['checkout:5']);
    expect(explained(p, 'home', '1', r).reasons).toEqual(['MINIMUM_COUNT_NOT_MET']);
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 5, minimumTreatmentCount: 2 }] })).toEqual(['home:1', 'home:2']);
  });

  it('reports the treatments cut by the maximum', () => {
    expect(explained(three, 'home', '1', {}, { ranking }).reasons).toEqual(['MAXIMUM_COUNT_REACHED']);
  });
});

describe('once per response and mutual exclusion (D28)', () => {
  it('returns a treatment only on the first requested surface where it is returned', () => {
    // both banner treatments are on home and inbox
    const p = plan([treatment('1'), treatment('2')]);
    const ranking = fixed({ '1': 0.9, '2': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'inbox' }, { surface: 'home' }] }, { ranking })).toEqual(['inbox:1', 'home:2']);
    const e = explained(p, 'home', '1', { surfaces: [{ surface: 'inbox' }, { surface: 'home' }] }, { ranking });
    expect(e).toMatchObject({ returned: false, reasons: ['RETURNED_ON_EARLIER_SURFACE'], blockedBy: 'inbox' });
  });

  it('lets a treatment cut by the maximum on one surface be returned on a later one', () => {
    const p = plan([treatment('1'), treatment('2')]);
    const ranking = fixed({ '1': 0.9, '2': 0.5 });
    expect(returned(p, { surfaces: [{ surface: 'home' }, { surface: 'inbox' }] }, { ranking })).toEqual(['home:1', 'inbox:2']);
  });

  it('returns at most one treatment of a group: the best ranked', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('2', '1', { group: 'g' }), treatment('3')]);
    const ranking = fixed({ '1': 0.3, '2': 0.8, '3': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] }, { ranking })).toEqual(['home:2', 'home:3']);
    expect(explained(p, 'home', '1', { surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] }, { ranking })).toMatchObject({ reasons: ['MUTUAL_EXCLUSION'], blockedBy: '2' });
  });

  it('keeps a group taken on an earlier surface taken on later ones', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('5', '2', { group: 'g' }), treatment('6', '2')]);
    const ranking = fixed({ '5': 0.9, '6': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'home' }, { surface: 'checkout' }] }, { ranking })).toEqual(['home:1', 'checkout:6']);
  });

  it('does not let a group member that is not returned (minimum not met) block the group', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('5', '2', { group: 'g' })]);
    const r = { surfaces: [{ surface: 'home', maximumTreatmentCount: 2, minimumTreatmentCount: 2 }, { surface: 'checkout' }] };
    expect(returned(p, r)).toEqual(['checkout:5']);
  });
});

describe('status: only LIVE treatments are served (D25)', () => {
  const p = plan([
    treatment('1', '1', { paused: true }),
    treatment('2', '1', { versions: [{ publishTime: undefined }] }),
    treatment('3', '1', { versions: [{ startTimestamp: iso(NOW + HOUR) }] }),
    treatment('4', '1', { versions: [{ endTimestamp: iso(NOW - HOUR) }] }),
  ]);

  it('never serves paused, draft, scheduled or archived treatments', () => {
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 10 }] })).toEqual([]);
    const e = explain(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 10 }] }).surfaces[0].treatments;
    expect(e.map((t) => [t.treatmentId, t.status, t.reasons])).toEqual([
      ['1', 'PAUSED', ['NOT_LIVE']],
      ['2', 'DRAFT', ['NOT_LIVE']],
      ['3', 'SCHEDULED', ['NOT_LIVE']],
      ['4', 'ARCHIVED', ['NOT_LIVE']],
    ]);
  });

  it('serves a scheduled treatment once its start passes and stops at its end, with the same plan', () => {
    const q = plan([treatment('3', '1', { versions: [{ startTimestamp: iso(NOW + HOUR), endTimestamp: iso(NOW + 2 * HOUR) }] })]);
    expect(returned(q, {}, { now: NOW + HOUR - 1 })).toEqual([]);
    expect(returned(q, {}, { now: NOW + HOUR })).toEqual(['home:3']);
    expect(returned(q, {}, { now: NOW + 2 * HOUR })).toEqual([]);
  });

  it('serves the latest published LIVE version, never a newer draft', () => {
    const q = plan([
      treatment('1', '1', {
        versions: [
          { publishTime: iso(NOW - 2 * HOUR), content: content({ en: 'old' }) },
          { publishTime: iso(NOW - HOUR), content: content({ en: 'new' }) },
          { publishTime: undefined, content: content({ en: 'draft' }) },
        ],
      }),
    ]);
    expect(JSON.parse(run(q).response.userTreatments![0].treatmentContent).title).toBe('new');
    expect(explained(q, 'home', '1').servedVersionNumber).toBe(2);
  });

  it('derives status and the served version exactly as treatment-status.ts does, at any time', () => {
    const records = [
      treatment('1', '1', { paused: true }),
      treatment('2', '1', { versions: [{ publishTime: undefined }] }),
      treatment('3', '1', { versions: [{ startTimestamp: iso(NOW + HOUR) }, { publishTime: iso(NOW), startTimestamp: iso(NOW - HOUR), endTimestamp: iso(NOW + 3 * HOUR) }] }),
      treatment('4', '1', { versions: [{ endTimestamp: iso(NOW - HOUR) }, { publishTime: undefined }] }),
      treatment('5', '1', { versions: [{ publishTime: iso(NOW), startTimestamp: iso(NOW + HOUR), endTimestamp: iso(NOW - HOUR) }] }),
      treatment('6', '1', { versions: [] }),
    ];
    const q = plan(records);
    for (const at of [NOW - 3 * HOUR, NOW - HOUR, NOW, NOW + HOUR, NOW + 2 * HOUR, NOW + 4 * HOUR]) {
      records.forEach((r, i) => {
        expect(plannedTreatmentStatus(q.treatments[i], at)).toBe(treatmentStatus(r, at));
        expect(servedPlannedVersion(q.treatments[i], at)?.versionNumber).toBe(servedVersion(r, at)?.versionNumber);
      });
    }
  });
});

describe('surfaces (D25, D28)', () => {
  it('never serves a treatment on a surface its served version removed', () => {
    const p = plan([treatment('1', '1', { versions: [{ removedSurfaces: ['home'] }] })]);
    expect(returned(p, { surfaces: [{ surface: 'home' }, { surface: 'inbox' }] })).toEqual(['inbox:1']);
    expect(explained(p, 'home', '1').reasons).toEqual(['SURFACE_REMOVED']);
  });

  it('never serves a treatment on a surface its type does not list', () => {
    const p = plan([treatment('5', '2')]);
    expect(returned(p, { surfaces: [{ surface: 'home' }] })).toEqual([]);
    expect(explained(p, 'home', '5').reasons).toEqual(['TYPE_LACKS_SURFACE']);
  });

  it('rejects an empty list, unregistered or repeated surfaces and bad counts with 400', () => {
    const p = plan([treatment('1')]);
    expect(badRequest(() => run(p, { surfaces: [] }))).toEqual(['surfaces']);
    expect(badRequest(() => run(p, { surfaces: [{ surface: 'home' }, { surface: 'nope' }] }))).toEqual(['surfaces[1].surface']);
    expect(badRequest(() => run(p, { surfaces: [{ surface: 'home' }, { surface: 'home' }] }))).toEqual(['surfaces[1].surface']);
    expect(badRequest(() => run(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: -1 }] }))).toEqual(['surfaces[0].maximumTreatmentCount']);
    expect(badRequest(() => run(p, { surfaces: [{ surface: 'home', minimumTreatmentCount: 2 }] }))).toEqual(['surfaces[0].minimumTreatmentCount']);
    expect(badRequest(() => run(p, { maximumTreatmentCount: 'x' }))).toEqual(['maximumTreatmentCount']);
  });
});

describe('language (D26)', () => {
  const p = plan([treatment('1', '1', { versions: [{ content: content({ en: 'Hello', 'de-CH': 'Grüezi', de: 'Hallo' }) }] })]);
  const title = (languageCode?: string) => {
    const u = run(p, { languageCode }).response.userTreatments?.[0];
    return u === undefined ? undefined : [JSON.parse(u.treatmentContent).title, u.contentLanguageCode];
  };

  it('defaults to en and matches the canonical tag exactly first', () => {
    expect(title()).toEqual(['Hello', 'en']);
    expect(title('')).toEqual(['Hello', 'en']);
    expect(title('de-ch')).toEqual(['Grüezi', 'de-CH']);
  });

  it('falls back to the base language', () => {
    expect(title('en-GB')).toEqual(['Hello', 'en']);
    expect(title('DE-AT')).toEqual(['Hallo', 'de']);
  });

  it('does not return a treatment without a translation, and never picks a more specific tag', () => {
    expect(title('fr')).toBeUndefined();
    const q = plan([treatment('1', '1', { versions: [{ content: content({ 'en-US': 'Howdy' }) }] })]);
    expect(run(q, { languageCode: 'en' }).response.userTreatments).toBeUndefined();
    expect(explained(q, 'home', '1', { languageCode: 'en' }).reasons).toEqual(['NO_CONTENT_FOR_LANGUAGE']);
  });

  it('serves a type without per-language fields in every language, labelled with the request’s tag', () => {
    const q = plan([treatment('9', '3', { versions: [{ content: { contentByLanguage: [], languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Any' }, { fieldName: 'link', stringValue: 'l' }] } }] })]);
    const u = run(q, { languageCode: 'ja-jp' }).response.userTreatments![0];
    expect(u.contentLanguageCode).toBe('ja-JP');
    expect(JSON.parse(u.treatmentContent)).toEqual({ title: 'Any', link: 'l' });
  });

  it('rejects a malformed language tag with 400', () => {
    expect(badRequest(() => run(p, { languageCode: 'not a tag!' }))).toEqual(['languageCode']);
  });
});

describe('placeholders (D30)', () => {
  const p = plan([treatment('1', '1', { versions: [{ content: content({ en: 'Hi {{first_name|friend}}, {{ plan }} {{missing}}!' }, 'https://x/{{user_code}}') }] })]);
  const contentOf = (r: Partial<DeliveryRequest>, profile: StoredProfile = NO_PROFILE) => JSON.parse(run(p, r, { profile }).response.userTreatments![0].treatmentContent);

  it('fills contextual attributes first, then stored user properties, then the fallback or nothing', () => {
    const profile: StoredProfile = { userProperties: { first_name: { stringValue: 'Ada' }, plan: { stringValue: 'gold' }, user_code: { longValue: '42' } }, fields: {} };
    expect(contentOf({ contextualAttributes: [{ key: 'plan', stringValue: 'trial' }] }, profile)).toEqual({ link: 'https://x/42', title: 'Hi Ada, trial !' });
    expect(contentOf({})).toEqual({ link: 'https://x/', title: 'Hi friend,  !' });
    expect(contentOf({ contextualAttributes: [{ key: 'first_name', integerValue: 7 }, { key: 'plan', boolValue: 1 }] })).toMatchObject({ title: 'Hi 7, true !' });
  });

  it('needs the profile only when a servable treatment has rules or placeholders', () => {
    expect(requestNeedsProfile(p, prepareRequest(p, request()), NOW)).toBe(true);
    const plain = plan([treatment('2')]);
    expect(requestNeedsProfile(plain, prepareRequest(plain, request()), NOW)).toBe(false);
    const ruled = plan([treatment('3', '1', { versions: [{ eligibilityRules: [rule('10', 'GREATER_THAN', '1')] }] })]);
    expect(requestNeedsProfile(ruled, prepareRequest(ruled, request()), NOW)).toBe(true);
  });
});

describe('eligibility rules (D25, D27)', () => {
  const adults = treatment('1', '1', { versions: [{ eligibilityRules: [rule('10', 'GREATER_THAN_OR_EQUALS', '18'), rule('11', 'EQUALS', 'gold')] }] });
  const p = plan([adults]);
  const profile = (age?: string, tier?: string): StoredProfile => ({
    userProperties: { ...(age !== undefined ? { age: { longValue: age } } : {}), ...(tier !== undefined ? { tier: { stringValue: tier } } : {}) },
    fields: {},
  });

  it('ANDs every rule over the stored profile', () => {
    expect(returned(p, {}, { profile: profile('30', 'gold') })).toEqual(['home:1']);
    expect(returned(p, {}, { profile: profile('30', 'silver') })).toEqual([]);
    expect(returned(p, {}, { profile: profile('12', 'gold') })).toEqual([]);
  });

  it('lets a contextual attribute of the data field’s name override the profile', () => {
    expect(returned(p, { contextualAttributes: [{ key: 'age', integerValue: '40' }] }, { profile: profile('12', 'gold') })).toEqual(['home:1']);
    expect(returned(p, { contextualAttributes: [{ key: 'tier', stringValue: 'silver' }] }, { profile: profile('30', 'gold') })).toEqual([]);
    // a numeric string for an INTEGER field reads as the number
    expect(returned(p, { contextualAttributes: [{ key: 'age', stringValue: '21' }] }, { profile: profile(undefined, 'gold') })).toEqual(['home:1']);
  });

  it('treats missing data by dataMissingBehaviour (default ineligible)', () => {
    expect(returned(p, {}, { profile: profile(undefined, 'gold') })).toEqual([]);
    const lenient = plan([treatment('2', '1', { versions: [{ eligibilityRules: [rule('12', 'EQUALS', 'true', 'EVALUATE_TO_ELIGIBLE')] }] })]);
    expect(returned(lenient)).toEqual(['home:2']);
    expect(returned(lenient, { contextualAttributes: [{ key: 'vip', boolValue: false }] })).toEqual([]);
  });

  it('treats a rule whose data field is gone as missing data', () => {
    const q = plan([treatment('3', '1', { versions: [{ eligibilityRules: [rule('999', 'EQUALS', 'x')] }] })]);
    expect(returned(q)).toEqual([]);
    expect(explained(q, 'home', '3').rules[0]).toMatchObject({ dataFieldId: '999', source: 'missing', outcome: { result: false, reason: 'MISSING_INELIGIBLE' } });
  });

  it('makes a contextual attribute of the wrong type fail its rule', () => {
    expect(returned(p, { contextualAttributes: [{ key: 'age', boolValue: true }] }, { profile: profile('30', 'gold') })).toEqual([]);
    // text that is no number is not compared as text against an INTEGER field's rhs
    const notEighteen = plan([treatment('4', '1', { versions: [{ eligibilityRules: [rule('10', 'NOT_EQUALS', '18')] }] })]);
    expect(returned(notEighteen, { contextualAttributes: [{ key: 'age', stringValue: 'abc' }] })).toEqual([]);
    expect(explained(notEighteen, 'home', '4', { contextualAttributes: [{ key: 'age', stringValue: 'abc' }] }).rules[0].outcome).toEqual({ result: false, reason: 'TYPE_MISMATCH' });
    expect(returned(notEighteen, { contextualAttributes: [{ key: 'age', integerValue: 20 }] })).toEqual(['home:4']);
  });

  it('explains every rule: the value used, its source and the outcome', () => {
    const e = explained(p, 'home', '1', { contextualAttributes: [{ key: 'tier', stringValue: 'silver' }] }, { profile: profile('30') });
    expect(e.reasons).toEqual(['RULE_NOT_MET']);
    expect(e.rules).toEqual([
      { dataFieldId: '10', dataFieldName: 'age', condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE', value: '30', source: 'profile', outcome: { result: true, reason: 'MATCHED' } },
      { dataFieldId: '11', dataFieldName: 'tier', condition: 'EQUALS', rhsValue: 'gold', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE', value: 'silver', source: 'contextualAttribute', outcome: { result: false, reason: 'NOT_MATCHED' } },
    ]);
    const missing = explained(p, 'home', '1', {}, { profile: profile('30') }).rules[1];
    expect(missing).toMatchObject({ source: 'missing', outcome: { result: false, reason: 'MISSING_INELIGIBLE' } });
    expect(missing.value).toBeUndefined();
  });
});

describe('contextual attributes (D26a)', () => {
  const p = plan([treatment('1')]);

  it('rejects a duplicate key with 400', () => {
    expect(badRequest(() => run(p, { contextualAttributes: [{ key: 'a', stringValue: 'x' }, { key: 'a', stringValue: 'y' }] }))).toEqual(['contextualAttributes[1].key']);
  });

  it('rejects an attribute without a value or with two values', () => {
    expect(badRequest(() => run(p, { contextualAttributes: [{ key: 'a' }] }))).toEqual(['contextualAttributes[0]']);
    expect(badRequest(() => run(p, { contextualAttributes: [{ key: 'a', stringValue: 'x', integerValue: 1 }] }))).toEqual(['contextualAttributes[0]']);
    expect(badRequest(() => run(p, { contextualAttributes: [{ key: 'a', boolValue: true, booleanValue: true }] }))).toEqual(['contextualAttributes[0]']);
  });

  it('rejects a value that does not parse, and reports every problem at once', () => {
    const fields = badRequest(() => run(p, { languageCode: '!!', contextualAttributes: [{ key: 'a', timestampValue: '2024-02-30T00:00:00Z' }, { key: 'b' }] }));
    expect(fields).toEqual(['languageCode', 'contextualAttributes[0].timestampValue', 'contextualAttributes[1]']);
  });

  it('keeps keys that are not data field names (for placeholders) without affecting rules', () => {
    expect(returned(p, { contextualAttributes: [{ key: 'screen', stringValue: 'x' }, { key: 'when', timestampMicrosValue: '1718452800000000' }] })).toEqual(['home:1']);
  });
});

describe('ranking', () => {
  it('passes the project, surface, treatment, user and that arm’s statistics to the policy', () => {
    const seen: unknown[] = [];
    const policy: RankingPolicy = {
      name: 'spy',
      score: (ctx, stats) => {
        seen.push({ ...ctx, ...stats });
        return 0;
      },
    };
    const stats = { get: (surface: string, treatmentId: string) => ({ views: surface.length, actions: Number(treatmentId) }) };
    run(plan([treatment('1'), treatment('2', '1', { paused: true })]), {}, { ranking: { policy, stats } });
    // only qualifying treatments are scored
    expect(seen).toEqual([{ projectId: PROJECT, surface: 'home', treatmentId: '1', userId: 'u1', views: 4, actions: 1 }]);
  });
});
