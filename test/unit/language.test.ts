import { describe, expect, it } from 'vitest';
import { baseLanguage, canonicalizeLanguageTag, pickContentLanguage } from '../../shared/treatments/language.js';

describe('canonicalizeLanguageTag', () => {
  it.each([
    ['en-us', 'en-US'],
    ['EN', 'en'],
    ['zh-hant-tw', 'zh-Hant-TW'],
    ['sr-latn-rs', 'sr-Latn-RS'],
    ['de-DE-1996', 'de-DE-1996'],
    ['es-419', 'es-419'],
    ['iw', 'he'],
  ])('%s → %s', (tag, canonical) => {
    expect(canonicalizeLanguageTag(tag)).toBe(canonical);
  });

  it.each(['', 'en_US', ' en', 'en ', 'en--us', 'toolongsubtag', 'x-private', '123', 'e'])('rejects %j as not well-formed', (tag) => {
    expect(canonicalizeLanguageTag(tag)).toBeNull();
  });

  it('is idempotent on canonical tags', () => {
    for (const tag of ['en', 'en-GB', 'zh-Hant-TW']) expect(canonicalizeLanguageTag(tag)).toBe(tag);
  });
});

describe('baseLanguage', () => {
  it('returns the primary language subtag', () => {
    expect(baseLanguage('en-GB')).toBe('en');
    expect(baseLanguage('zh-Hant-TW')).toBe('zh');
    expect(baseLanguage('fr')).toBe('fr');
  });
});

describe('pickContentLanguage', () => {
  it('prefers the exact tag over the base language', () => {
    expect(pickContentLanguage(['en', 'en-GB'], 'en-GB')).toBe('en-GB');
  });

  it('falls back to the base language of the request', () => {
    expect(pickContentLanguage(['fr', 'en'], 'en-GB')).toBe('en');
  });

  it('falls back through ever shorter prefixes before the base language', () => {
    expect(pickContentLanguage(['zh', 'zh-Hant'], 'zh-Hant-TW')).toBe('zh-Hant');
    expect(pickContentLanguage(['zh'], 'zh-Hant-TW')).toBe('zh');
  });

  it('drops a dangling extension singleton while truncating', () => {
    expect(pickContentLanguage(['en-GB'], 'en-GB-u-ca-gregory')).toBe('en-GB');
  });

  it('never picks a more specific or a sibling tag', () => {
    expect(pickContentLanguage(['en-US'], 'en')).toBeNull();
    expect(pickContentLanguage(['en-US'], 'en-GB')).toBeNull();
  });

  it('returns null when nothing matches', () => {
    expect(pickContentLanguage(['de', 'fr'], 'en')).toBeNull();
    expect(pickContentLanguage([], 'en')).toBeNull();
  });

  it('does not match a language that only shares a prefix of letters', () => {
    expect(pickContentLanguage(['e'], 'en')).toBeNull();
  });

  it('returns the stored tag even when casing differs', () => {
    expect(pickContentLanguage(['en-GB'], 'en-gb')).toBe('en-GB');
  });
});
