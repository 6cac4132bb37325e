import { describe, expect, it } from 'vitest';
import { validateContent, validateRemovedSurfaces, validateRules, type ConditionFitCheck } from '../../shared/treatments/content-validation.js';
import type { Content, ContentField, EligibilityRule } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';

const type: TreatmentType = {
  treatmentTypeId: '1',
  projectId: 'p',
  treatmentTypeName: 'banner',
  deliveryType: 'IN_APP',
  contentFieldTypes: [
    { fieldName: 'title', maximumLengthAllowed: 5, isPerLanguage: true, dataType: 'STRING' },
    { fieldName: 'body', maximumLengthAllowed: 100, isPerLanguage: true, dataType: 'HTML' },
    { fieldName: 'link', maximumLengthAllowed: 20, isPerLanguage: false, dataType: 'STRING' },
  ],
  surfaces: ['home', 'inbox'],
  lastModifiedBy: 'me',
  lastModifiedTimestamp: '2025-01-01T00:00:00.000Z',
  createTime: '2025-01-01T00:00:00.000Z',
};

const f = (fieldName: string, stringValue = 'x'): ContentField => ({ fieldName, stringValue });
const lang = (languageCode: string, ...contentFields: ContentField[]) => ({ languageCode: { languageCode }, contentFields });
const content = (byLanguage: Content['contentByLanguage'], agnostic: ContentField[] = []): Content => ({
  contentByLanguage: byLanguage,
  languageAgnosticContentFields: agnostic,
});

describe('validateContent', () => {
  it('accepts valid content with no problems', () => {
    const c = content([lang('en', f('title', 'Hi'), f('body', 'Hello')), lang('de', f('title', 'Hallo'))], [f('link', 'https://x.y')]);
    const result = validateContent(c, type);
    expect(result.problems).toEqual([]);
    expect(result.content).toEqual(c);
  });

  it('canonicalises language codes and does not touch the input', () => {
    const c = content([lang('en-us', f('title')), lang('ZH-hant-tw', f('title'))]);
    const result = validateContent(c, type);
    expect(result.problems).toEqual([]);
    expect(result.content.contentByLanguage.map((e) => e.languageCode.languageCode)).toEqual(['en-US', 'zh-Hant-TW']);
    expect(c.contentByLanguage[0].languageCode.languageCode).toBe('en-us');
  });

  it.each(['en_US', '', 'english!', '123', 'en-'])('rejects the malformed language tag %j', (code) => {
    const { problems } = validateContent(content([lang('en', f('title')), lang(code, f('title'))]), type);
    expect(problems).toEqual([{ field: 'content.contentByLanguage[1].languageCode.languageCode', description: expect.stringContaining('BCP 47') }]);
  });

  it('rejects the same language twice, after canonicalisation', () => {
    const { problems } = validateContent(content([lang('en-US', f('title')), lang('fr', f('title')), lang('en-us', f('body'))]), type);
    expect(problems).toEqual([
      { field: 'content.contentByLanguage[2].languageCode.languageCode', description: expect.stringContaining('contentByLanguage[0]') },
    ]);
  });

  it('rejects a field name that is not a field of the type, in either list', () => {
    const { problems } = validateContent(content([lang('en', f('title'), f('subtitle'))], [f('nope')]), type);
    expect(problems.map((p) => p.field)).toEqual([
      'content.contentByLanguage[0].contentFields[1].fieldName',
      'content.languageAgnosticContentFields[0].fieldName',
    ]);
    expect(problems[0].description).toContain('"subtitle"');
  });

  it('rejects a language-agnostic field inside contentByLanguage', () => {
    const { problems } = validateContent(content([lang('en', f('link'))]), type);
    expect(problems).toEqual([
      { field: 'content.contentByLanguage[0].contentFields[0].fieldName', description: expect.stringContaining('languageAgnosticContentFields') },
    ]);
  });

  it('rejects a per-language field among the language-agnostic fields', () => {
    const { problems } = validateContent(content([], [f('link'), f('title')]), type);
    expect(problems).toEqual([{ field: 'content.languageAgnosticContentFields[1].fieldName', description: expect.stringContaining('contentByLanguage') }]);
  });

  it('rejects a field given twice in one list but allows it once per language', () => {
    const { problems } = validateContent(content([lang('en', f('title'), f('body'), f('title')), lang('de', f('title'))], [f('link'), f('link')]), type);
    expect(problems.map((p) => p.field)).toEqual([
      'content.contentByLanguage[0].contentFields[2].fieldName',
      'content.languageAgnosticContentFields[1].fieldName',
    ]);
  });

  it('limits value length in code points: at the limit passes, one more fails', () => {
    expect(validateContent(content([lang('en', f('title', '12345'))]), type).problems).toEqual([]);
    // Five emoji are ten UTF-16 units but five characters.
    expect(validateContent(content([lang('en', f('title', '😀😀😀😀😀'))]), type).problems).toEqual([]);
    const { problems } = validateContent(content([lang('en', f('title', '123456'))], [f('link', 'x'.repeat(21))]), type);
    expect(problems).toEqual([
      { field: 'content.contentByLanguage[0].contentFields[0].stringValue', description: expect.stringMatching(/6 .*at most 5/) },
      { field: 'content.languageAgnosticContentFields[0].stringValue', description: expect.stringMatching(/21 .*at most 20/) },
    ]);
  });

  it('reports every problem at once', () => {
    const { problems } = validateContent(content([lang('xx_YY', f('link', 'x'.repeat(30)), f('ghost'))]), type);
    expect(problems.map((p) => p.field)).toEqual([
      'content.contentByLanguage[0].languageCode.languageCode',
      'content.contentByLanguage[0].contentFields[0].fieldName',
      'content.contentByLanguage[0].contentFields[0].stringValue',
      'content.contentByLanguage[0].contentFields[1].fieldName',
    ]);
  });
});

describe('validateRules', () => {
  const fields = new Map<string, DataFieldType>([
    ['10', 'BOOLEAN'],
    ['11', 'INTEGER'],
  ]);
  const fits: ConditionFitCheck = (condition, t) => t !== 'BOOLEAN' || condition === 'EQUALS' || condition === 'NOT_EQUALS';
  const rule = (dataFieldId: string, condition: EligibilityRule['condition']): EligibilityRule => ({
    dataFieldId,
    condition,
    rhsValue: '1',
    dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE',
  });

  it('accepts rules on known fields with fitting conditions', () => {
    expect(validateRules([rule('10', 'EQUALS'), rule('11', 'LESS_THAN')], fields, fits)).toEqual([]);
    expect(validateRules([], fields, fits)).toEqual([]);
  });

  it('rejects a data field that does not exist in the project', () => {
    expect(validateRules([rule('11', 'EQUALS'), rule('99', 'EQUALS')], fields, fits)).toEqual([
      { field: 'eligibilityRules.rules[1].dataFieldId', description: expect.stringContaining('99') },
    ]);
  });

  it('rejects UNSPECIFIED_CONDITION', () => {
    expect(validateRules([rule('11', 'UNSPECIFIED_CONDITION')], fields, fits)).toEqual([
      { field: 'eligibilityRules.rules[0].condition', description: expect.any(String) },
    ]);
  });

  it('rejects a condition that does not fit the field type, asking the injected check', () => {
    const asked: [string, string][] = [];
    const recording: ConditionFitCheck = (c, t) => (asked.push([c, t]), fits(c, t));
    expect(validateRules([rule('10', 'LESS_THAN')], fields, recording)).toEqual([
      { field: 'eligibilityRules.rules[0].condition', description: expect.stringMatching(/LESS_THAN.*BOOLEAN/) },
    ]);
    expect(asked).toEqual([['LESS_THAN', 'BOOLEAN']]);
  });

  it('reports an unknown field and an unspecified condition together', () => {
    expect(validateRules([rule('99', 'UNSPECIFIED_CONDITION')], fields, fits).map((p) => p.field)).toEqual([
      'eligibilityRules.rules[0].dataFieldId',
      'eligibilityRules.rules[0].condition',
    ]);
  });
});

describe('validateRemovedSurfaces', () => {
  it('accepts surfaces of the type', () => {
    expect(validateRemovedSurfaces(['inbox', 'home'], type)).toEqual([]);
  });

  it('requires an exact, case-sensitive match', () => {
    expect(validateRemovedSurfaces(['home', 'Inbox', 'mail'], type)).toEqual([
      { field: 'removedSurfaces.surfaces[1].name', description: expect.stringContaining('"Inbox"') },
      { field: 'removedSurfaces.surfaces[2].name', description: expect.stringContaining('"mail"') },
    ]);
  });
});
