import { describe, expect, it } from 'vitest';
import { prepareRequest, requestNeedsProfile, selectTreatments, type DeliveryRequest } from '../../shared/delivery/index.js';
import { type RankingPolicy } from '../../shared/delivery/ranking/ranking-policy.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';
import { NOW, PROJECT, content, treatment, rule, plan, NO_PROFILE, request, run, returned, explained, badRequest } from '../helpers/delivery-plan.js';

/** Delivery's targeting: surfaces, language, placeholders, eligibility rules, contextual attributes and ranking. */
describe('surfaces a treatment is served on', () => {
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

describe('language', () => {
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
    const q = plan([
      treatment('9', '3', {
        versions: [
          {
            content: {
              contentByLanguage: [],
              languageAgnosticContentFields: [
                { fieldName: 'title', stringValue: 'Any' },
                { fieldName: 'link', stringValue: 'l' },
              ],
            },
          },
        ],
      }),
    ]);
    const u = run(q, { languageCode: 'ja-jp' }).response.userTreatments![0];
    expect(u.contentLanguageCode).toBe('ja-JP');
    expect(JSON.parse(u.treatmentContent)).toEqual({ title: 'Any', link: 'l' });
  });

  it('rejects a malformed language tag with 400', () => {
    expect(badRequest(() => run(p, { languageCode: 'not a tag!' }))).toEqual(['languageCode']);
  });
});

describe('placeholders', () => {
  const p = plan([
    treatment('1', '1', { versions: [{ content: content({ en: 'Hi {{first_name|friend}}, {{ plan }} {{missing}}!' }, 'https://x/{{user_code}}') }] }),
  ]);
  const contentOf = (r: Partial<DeliveryRequest>, profile: StoredProfile = NO_PROFILE) =>
    JSON.parse(run(p, r, { profile }).response.userTreatments![0].treatmentContent);

  it('fills contextual attributes first, then stored user properties, then the fallback or nothing', () => {
    const profile: StoredProfile = {
      userProperties: { first_name: { stringValue: 'Ada' }, plan: { stringValue: 'gold' }, user_code: { longValue: '42' } },
      fields: {},
    };
    expect(contentOf({ contextualAttributes: [{ key: 'plan', stringValue: 'trial' }] }, profile)).toEqual({ link: 'https://x/42', title: 'Hi Ada, trial !' });
    expect(contentOf({})).toEqual({ link: 'https://x/', title: 'Hi friend,  !' });
    expect(
      contentOf({
        contextualAttributes: [
          { key: 'first_name', integerValue: 7 },
          { key: 'plan', boolValue: 1 },
        ],
      }),
    ).toMatchObject({ title: 'Hi 7, true !' });
  });

  it('needs the profile only when a servable treatment has rules or placeholders', () => {
    expect(requestNeedsProfile(p, prepareRequest(p, request()), NOW)).toBe(true);
    const plain = plan([treatment('2')]);
    expect(requestNeedsProfile(plain, prepareRequest(plain, request()), NOW)).toBe(false);
    const ruled = plan([treatment('3', '1', { versions: [{ eligibilityRules: [rule('10', 'GREATER_THAN', '1')] }] })]);
    expect(requestNeedsProfile(ruled, prepareRequest(ruled, request()), NOW)).toBe(true);
  });
});

describe('eligibility rules', () => {
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
    expect(explained(q, 'home', '3').rules[0]).toMatchObject({
      dataFieldId: '999',
      source: 'missing',
      outcome: { result: false, reason: 'MISSING_INELIGIBLE' },
    });
  });

  it('makes a contextual attribute of the wrong type fail its rule', () => {
    expect(returned(p, { contextualAttributes: [{ key: 'age', boolValue: true }] }, { profile: profile('30', 'gold') })).toEqual([]);
    // text that is no number is not compared as text against an INTEGER field's rhs
    const notEighteen = plan([treatment('4', '1', { versions: [{ eligibilityRules: [rule('10', 'NOT_EQUALS', '18')] }] })]);
    expect(returned(notEighteen, { contextualAttributes: [{ key: 'age', stringValue: 'abc' }] })).toEqual([]);
    expect(explained(notEighteen, 'home', '4', { contextualAttributes: [{ key: 'age', stringValue: 'abc' }] }).rules[0].outcome).toEqual({
      result: false,
      reason: 'TYPE_MISMATCH',
    });
    expect(returned(notEighteen, { contextualAttributes: [{ key: 'age', integerValue: 20 }] })).toEqual(['home:4']);
  });

  it('explains every rule: the value used, its source and the outcome', () => {
    const e = explained(p, 'home', '1', { contextualAttributes: [{ key: 'tier', stringValue: 'silver' }] }, { profile: profile('30') });
    expect(e.reasons).toEqual(['RULE_NOT_MET']);
    expect(e.rules).toEqual([
      {
        dataFieldId: '10',
        dataFieldName: 'age',
        condition: 'GREATER_THAN_OR_EQUALS',
        rhsValue: '18',
        dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE',
        value: '30',
        source: 'profile',
        outcome: { result: true, reason: 'MATCHED' },
      },
      {
        dataFieldId: '11',
        dataFieldName: 'tier',
        condition: 'EQUALS',
        rhsValue: 'gold',
        dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE',
        value: 'silver',
        source: 'contextualAttribute',
        outcome: { result: false, reason: 'NOT_MATCHED' },
      },
    ]);
    const missing = explained(p, 'home', '1', {}, { profile: profile('30') }).rules[1];
    expect(missing).toMatchObject({ source: 'missing', outcome: { result: false, reason: 'MISSING_INELIGIBLE' } });
    expect(missing.value).toBeUndefined();
  });
});

describe('contextual attributes', () => {
  const p = plan([treatment('1')]);

  it('rejects a duplicate key with 400', () => {
    expect(
      badRequest(() =>
        run(p, {
          contextualAttributes: [
            { key: 'a', stringValue: 'x' },
            { key: 'a', stringValue: 'y' },
          ],
        }),
      ),
    ).toEqual(['contextualAttributes[1].key']);
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
    expect(
      returned(p, {
        contextualAttributes: [
          { key: 'screen', stringValue: 'x' },
          { key: 'when', timestampMicrosValue: '1718452800000000' },
        ],
      }),
    ).toEqual(['home:1']);
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
    // delivery alone (`run` adds the explanation's pass, which scores them again)
    selectTreatments(plan([treatment('1'), treatment('2', '1', { paused: true })]), request(), NO_PROFILE, { policy, stats }, NOW, 'resp1');
    // only qualifying treatments are scored
    expect(seen).toEqual([{ projectId: PROJECT, surface: 'home', treatmentId: '1', userId: 'u1', views: 4, actions: 1 }]);
  });
});
