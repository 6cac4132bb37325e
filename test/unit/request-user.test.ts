import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileCatalogPlan, type CatalogPlan } from '../../shared/delivery/catalog-plan.js';
import { prepareRequest, requestNeedsIdentity, resolveRequestUser, selectTreatments, type UserLookup } from '../../shared/delivery/index.js';
import type { TreatmentRecord } from '../../shared/treatments/index.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';
import { BANNER, CARD, FIELDS, fixed, NOW, PROJECT, request, rule, SURFACES, treatment } from '../helpers/delivery-plan.js';

/**
 * Who a GetTreatments request is decided for: a pre-login id merged into a user stands for that
 * user (holdout buckets, QA lookups, the logged user), at the cost of at most the one read the
 * request needs. The lookup is a fake that records its reads (the real one is the profile store,
 * covered by test/integration/identity-merge.test.ts).
 */
const T = 'anon-7';
const U = 'alice';

function lookup(aliases: Record<string, string>, profiles: Record<string, StoredProfile> = {}) {
  const reads: string[] = [];
  const users: UserLookup = {
    get: async (_p, userId) => {
      reads.push(`get:${userId}`);
      const to = aliases[userId];
      const profile = profiles[to ?? userId] ?? { userProperties: {}, fields: {} };
      return to === undefined ? profile : { ...profile, mergedInto: to };
    },
    canonicalUser: async (_p, userId) => {
      reads.push(`alias:${userId}`);
      return aliases[userId] ?? userId;
    },
  };
  return { users, reads };
}

function plan(treatments: TreatmentRecord[], globalHoldoutPercentage?: number): CatalogPlan {
  return compileCatalogPlan({ projectId: PROJECT, treatments, types: [BANNER, CARD], surfaces: SURFACES, dataFields: FIELDS, globalHoldoutPercentage });
}

const withControls = (id: string, controls: Partial<TreatmentRecord>, typeId = '1') => ({ ...treatment(id, typeId), ...controls });

async function decide(p: CatalogPlan, userId: string, users: UserLookup, surface = 'home') {
  const prepared = prepareRequest(p, request({ userId, surfaces: [{ surface }] }));
  const who = await resolveRequestUser(p, prepared, NOW, users);
  const result = selectTreatments(p, request({ userId }), who.profile, fixed(), NOW, 'r1', { prepared: who.prepared });
  return { userId: who.prepared.userId, returned: (result.response.userTreatments ?? []).map((u) => u.treatmentId), decisions: result.decisions };
}

const bucket = (key: string) => createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;

describe('resolveRequestUser', () => {
  it('reads nothing when neither rules, holdouts nor QA lists make the answer depend on the user', async () => {
    const { users, reads } = lookup({ [T]: U });
    const p = plan([treatment('1'), withControls('2', { holdoutPercentage: 50, qaUserIds: [U] }, '2')]);
    // the holdout and the QA list are on `checkout` only
    const d = await decide(p, T, users, 'home');
    expect(reads).toEqual([]);
    expect(d.userId).toBe(T);
    expect(requestNeedsIdentity(p, prepareRequest(p, request({ userId: T })), NOW)).toBe(false);
  });

  it('takes the merged user from the profile read when a candidate needs the profile (no second read)', async () => {
    const { users, reads } = lookup({ [T]: U }, { [U]: { userProperties: {}, fields: {}, mergedFrom: [T] } });
    const p = plan([
      { ...treatment('1', '1', { versions: [{ eligibilityRules: [rule('11', 'EQUALS', 'gold', 'EVALUATE_TO_ELIGIBLE')] }] }), holdoutPercentage: 10 },
    ]);
    const d = await decide(p, T, users);
    expect(reads).toEqual([`get:${T}`]);
    expect(d.userId).toBe(U);
  });

  it('reads the alias alone when only a holdout, a global holdout or a QA list on a requested surface depends on the user', async () => {
    for (const p of [plan([withControls('1', { holdoutPercentage: 10 })]), plan([treatment('1')], 10), plan([withControls('1', { qaUserIds: ['someone'] })])]) {
      const { users, reads } = lookup({ [T]: U });
      expect((await decide(p, T, users)).userId).toBe(U);
      expect(reads).toEqual([`alias:${T}`]);
    }
  });

  it('buckets a merged pre-login id for holdouts (per treatment and global) as its user', async () => {
    // ids on either side of a 50 % holdout: the user is held out, the pre-login id on its own would not be
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    const held = ids.find((id) => bucket(`${PROJECT}:1:${id}`) < 5000 && bucket(`${PROJECT}:global:${id}`) < 5000)!;
    const free = ids.find((id) => bucket(`${PROJECT}:1:${id}`) >= 5000 && bucket(`${PROJECT}:global:${id}`) >= 5000)!;
    const { users } = lookup({ [free]: held });
    const perTreatment = plan([withControls('1', { holdoutPercentage: 50 })]);
    expect((await decide(perTreatment, free, lookup({}).users)).returned).toEqual(['1']);
    const merged = await decide(perTreatment, free, users);
    expect(merged).toMatchObject({ userId: held, returned: [] });
    expect(merged.decisions.map((d) => d.outcome)).toEqual(['HOLDOUT']);
    const global = await decide(plan([treatment('1')], 50), free, users);
    expect(global).toMatchObject({ userId: held, returned: [] });
    expect(global.decisions.map((d) => d.outcome)).toEqual(['GLOBAL_HOLDOUT']);
  });

  it('looks a merged pre-login id up as its user in QA lists: a list naming the user serves it, one naming only the id does not', async () => {
    const draft = { publishTime: undefined };
    const p = plan([
      { ...treatment('1', '1', { versions: [draft] }), qaUserIds: [U] },
      { ...treatment('2', '1', { versions: [draft] }), qaUserIds: [T] },
    ]);
    const { users } = lookup({ [T]: U });
    const d = await decide(p, T, users);
    expect(d).toMatchObject({ userId: U, returned: ['1'] });
    expect(d.decisions).toEqual([{ treatmentId: '1', versionNumber: 1, surface: 'home', rank: 1, outcome: 'QA' }]);
    // an id that was never merged is still its own QA user
    expect((await decide(p, T, lookup({}).users)).returned).toEqual(['2']);
  });

  it("reads the user's profile when the user's QA treatments need it where the pre-login id's candidates did not", async () => {
    const p = plan([{ ...treatment('1', '1', { versions: [{ publishTime: undefined, eligibilityRules: [rule('11', 'EQUALS', 'gold')] }] }), qaUserIds: [U] }]);
    const { users, reads } = lookup({ [T]: U });
    expect((await decide(p, T, users)).userId).toBe(U);
    expect(reads).toEqual([`alias:${T}`, `get:${U}`]);
  });
});
