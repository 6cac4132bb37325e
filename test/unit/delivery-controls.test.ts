import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileCatalogPlan, type CatalogPlan } from '../../shared/domain/catalog-plan.js';
import { selectTreatments, type DeliveryRequest, type Ranking } from '../../shared/domain/delivery.js';
import { EMPTY_STATS_VIEW, type RankingPolicy } from '../../shared/domain/ranking/ranking-policy.js';
import type { Content, TreatmentRecord, TreatmentType, TreatmentVersionRecord } from '../../shared/domain/types.js';
import type { StoredProfile } from '../../shared/stores/profile.store.js';

const NOW = Date.parse('2024-06-15T12:00:00Z');
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const PROJECT = 'p1';
const SURFACES = ['home', 'inbox', 'checkout'];

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
    versions: (versionsIn ?? [{}]).map((v, i) => version({ versionNumber: i + 1, ...v })),
    ...rest,
  };
}

function plan(treatments: TreatmentRecord[], extra: { globalHoldoutPercentage?: number } = {}): CatalogPlan {
  return compileCatalogPlan({ projectId: PROJECT, treatments, types: [BANNER], surfaces: SURFACES, dataFields: [], ...extra });
}

function fixed(scores: Record<string, number> = {}): Ranking {
  const policy: RankingPolicy = { name: 'fixed', score: (ctx) => scores[ctx.treatmentId] ?? 0 };
  return { policy, stats: EMPTY_STATS_VIEW };
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

/** D37's bucket, computed independently of the service's code. */
function bucketOf(key: string): number {
  return createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;
}

// ------------------------------------------------------------------------------------------------

describe('decisions', () => {
  it('lists one RETURNED decision per returned treatment with its rank and served version', () => {
    const p = plan([treatment('1'), treatment('2', { versionsIn: [{ publishTime: iso(NOW - 3 * HOUR), endTimestamp: iso(NOW - HOUR) }, { publishTime: iso(NOW - HOUR), startTimestamp: iso(NOW - HOUR) }] })]);
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
