import { expect } from 'vitest';
import { compileCatalogPlan, type CatalogPlan } from '../../shared/delivery/catalog-plan.js';
import { selectTreatments, type DeliveryRequest, type Ranking, type TreatmentExplanation } from '../../shared/delivery/index.js';
import { EMPTY_STATS_VIEW, type RankingPolicy } from '../../shared/delivery/ranking/ranking-policy.js';
import type { Content, EligibilityRule, TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import { InvalidArgumentError } from '../../shared/platform/errors.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';

/** Catalogue fixtures compiled into a plan, and delivery run on it at a fixed now, for the delivery logic tests. */
export const NOW = Date.parse('2024-06-15T12:00:00Z');
export const HOUR = 3_600_000;
export const iso = (ms: number) => new Date(ms).toISOString();
export const PROJECT = 'p1';
export const SURFACES = ['home', 'inbox', 'checkout'];
export function type(id: string, name: string, surfaces: string[], perLanguage = true): TreatmentType {
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

export const BANNER = type('1', 'banner', ['home', 'inbox']);
export const CARD = type('2', 'card', ['checkout']);
export const PLAIN = type('3', 'plain', ['home'], false);

export function content(titles: Record<string, string> = { en: 'Hello' }, link = 'https://x/1'): Content {
  return {
    contentByLanguage: Object.entries(titles).map(([languageCode, title]) => ({
      languageCode: { languageCode },
      contentFields: [{ fieldName: 'title', stringValue: title }],
    })),
    languageAgnosticContentFields: [{ fieldName: 'link', stringValue: link }],
  };
}

export function version(v: Partial<TreatmentVersionRecord> = {}): TreatmentVersionRecord {
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

export function treatment(
  id: string,
  typeId = '1',
  opts: { paused?: boolean; group?: string; versions?: Partial<TreatmentVersionRecord>[] } = {},
): TreatmentRecord {
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

export const FIELDS: DataFieldRecord[] = [
  { dataFieldId: '10', projectId: PROJECT, name: 'age', dataFieldType: 'INTEGER', createTime: iso(NOW) },
  { dataFieldId: '11', projectId: PROJECT, name: 'tier', dataFieldType: 'STRING', createTime: iso(NOW) },
  { dataFieldId: '12', projectId: PROJECT, name: 'vip', dataFieldType: 'BOOLEAN', createTime: iso(NOW) },
];

export function rule(
  dataFieldId: string,
  condition: EligibilityRule['condition'],
  rhsValue: string,
  dataMissingBehaviour: EligibilityRule['dataMissingBehaviour'] = 'EVALUATE_TO_INELIGIBLE',
): EligibilityRule {
  return { dataFieldId, condition, rhsValue, dataMissingBehaviour };
}

export function plan(treatments: TreatmentRecord[], types: TreatmentType[] = [BANNER, CARD, PLAIN]): CatalogPlan {
  return compileCatalogPlan({ projectId: PROJECT, treatments, types, surfaces: SURFACES, dataFields: FIELDS });
}

/** Deterministic ranking: a fixed score per treatment (default 0; ties go to the lower id). */
export function fixed(scores: Record<string, number> = {}): Ranking {
  const policy: RankingPolicy = { name: 'fixed', score: (ctx) => scores[ctx.treatmentId] ?? 0 };
  return { policy, stats: EMPTY_STATS_VIEW };
}

export const NO_PROFILE: StoredProfile = { userProperties: {}, fields: {} };

export function request(r: Partial<DeliveryRequest> = {}): DeliveryRequest {
  return { projectId: PROJECT, userId: 'u1', surfaces: [{ surface: 'home' }], ...r };
}

/**
 * Delivery on the plan. Every call also runs the explanation's full path on the same input: delivery
 * takes short-cuts (it builds verdicts for the qualifying candidates only, stops at a treatment's
 * first failed rule) that must reach the same response and decisions.
 */
export function run(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; ranking?: Ranking; now?: number } = {}) {
  const args = [p, request(r), opts.profile ?? NO_PROFILE, opts.ranking ?? fixed(), opts.now ?? NOW, 'resp1'] as const;
  const delivered = selectTreatments(...args);
  const full = selectTreatments(...args, { explain: true });
  expect({ response: full.response, decisions: full.decisions }, 'the explanation reaches the same answer').toEqual({
    response: delivered.response,
    decisions: delivered.decisions,
  });
  return delivered;
}

export function returned(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: Parameters<typeof run>[2] = {}): string[] {
  return (run(p, r, opts).response.userTreatments ?? []).map((u) => `${u.surface}:${u.treatmentId}`);
}

export function explain(p: CatalogPlan, r: Partial<DeliveryRequest> = {}, opts: { profile?: StoredProfile; ranking?: Ranking; now?: number } = {}) {
  return selectTreatments(p, request(r), opts.profile ?? NO_PROFILE, opts.ranking ?? fixed(), opts.now ?? NOW, 'resp1', { explain: true }).explanation!;
}

export function explained(
  p: CatalogPlan,
  surface: string,
  treatmentId: string,
  r: Partial<DeliveryRequest> = {},
  opts: Parameters<typeof explain>[2] = {},
): TreatmentExplanation {
  const e = explain(p, r, opts).surfaces.find((s) => s.surface === surface)!;
  return e.treatments.find((t) => t.treatmentId === treatmentId)!;
}

export function badRequest(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as InvalidArgumentError).details.map((d) => d.field);
  }
  throw new Error('expected a 400');
}
