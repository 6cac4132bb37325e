import type { SeedProfile } from './bench-redis.js';
import { dailyCountKey } from '../../shared/profiles/index.js';
import type { ProjectKeys, ServiceProcess } from './service-process.js';

/** The shape of the delivery scenario's project (bench/scenarios/delivery.ts). */
export interface CatalogueParams {
  treatments: number;
  surfaces: number;
}

const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'ES', 'IT', 'NL', 'SE'];
export const surfaceName = (k: number) => `surface_${k + 1}`;

export interface Catalogue {
  ageId: string;
  countryId: string;
  premiumId: string;
  purchasesId: string;
}

/**
 * Five surfaces; five treatment types, type k on surfaces k and k+1; data fields `age`,
 * `country`, `premium`, `first_name` (user properties) and a 7-day purchase count (an event
 * aggregation read from the profile's day counters).
 */
export async function createCatalogue(svc: ServiceProcess, keys: ProjectKeys, p: CatalogueParams): Promise<Catalogue> {
  const m = (op: string, body: Record<string, unknown>) => svc.call(op, keys.management, { projectId: keys.projectId, ...body });
  for (let k = 0; k < p.surfaces; k++) await m('InsertSurface', { name: surfaceName(k) });
  for (let k = 0; k < p.surfaces; k++) {
    await m('InsertTreatmentType', {
      treatmentTypeName: `type_${k + 1}`,
      lastModifiedBy: 'bench',
      surfaces: [{ surfaceName: surfaceName(k) }, { surfaceName: surfaceName((k + 1) % p.surfaces) }],
      contentFieldTypes: [
        { fieldName: 'title', maximumLengthAllowed: 200, isPerLanguage: true },
        { fieldName: 'body', maximumLengthAllowed: 1000, isPerLanguage: true },
        { fieldName: 'link', maximumLengthAllowed: 200 },
      ],
    });
  }
  const field = async (name: string, dataType: string) => (await m('InsertDataField', { name, userProperty: { dataType } })).dataField.dataFieldId as string;
  const catalogue: Catalogue = {
    ageId: await field('age', 'INTEGER'),
    countryId: await field('country', 'STRING'),
    premiumId: await field('premium', 'BOOLEAN'),
    purchasesId: '',
  };
  await field('first_name', 'STRING');
  const agg = await m('GetDataFields', {
    dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
  });
  catalogue.purchasesId = agg.dataFields[0].dataFieldId;
  for (let t = 0; t < p.treatments; t++) await m('InsertTreatment', treatmentBody(t, p, catalogue));
  return catalogue;
}

/** Three rules per treatment over profile data, with thresholds that let part of the users through. */
function treatmentBody(t: number, p: CatalogueParams, c: Catalogue): Record<string, unknown> {
  const countries = [0, 1, 2, 3].map((j) => COUNTRIES[(t + j * 2) % COUNTRIES.length]);
  const third =
    t % 2 === 0
      ? { dataFieldId: c.premiumId, condition: 'EQUALS', rhsValue: 'true', dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE' }
      : { dataFieldId: c.purchasesId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: String(t % 4) };
  const text = (lang: string) => [
    { fieldName: 'title', stringValue: lang === 'en' ? `Offer ${t} for {{first_name|you}}` : `Angebot ${t} für {{first_name|dich}}` },
    { fieldName: 'body', stringValue: `${lang}: treatment ${t} body text with some length to render and return to the client.` },
  ];
  return {
    name: `treatment ${t}`,
    description: 'benchmark treatment',
    treatmentTypeName: `type_${(t % p.surfaces) + 1}`,
    lastModifiedBy: 'bench',
    startTimestamp: new Date(Date.now() - 3600_000).toISOString(),
    shouldPublish: true,
    content: {
      contentByLanguage: ['en', 'de'].map((languageCode) => ({ languageCode: { languageCode }, contentFields: text(languageCode) })),
      languageAgnosticContentFields: [{ fieldName: 'link', stringValue: `https://example.com/offer/${t}` }],
    },
    eligibilityRules: {
      rules: [
        { dataFieldId: c.ageId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: String(18 + ((t * 7) % 40)) },
        { dataFieldId: c.countryId, condition: 'ANY_OF', rhsValue: JSON.stringify(countries) },
        third,
      ],
    },
  };
}

export function profileOf(i: number, c: Catalogue, today: string): SeedProfile {
  return {
    userProperties: {
      age: { longValue: String(18 + ((i * 13) % 60)) },
      country: { stringValue: COUNTRIES[i % COUNTRIES.length] },
      premium: { booleanValue: i % 3 === 0 },
      first_name: { stringValue: `Name${i}` },
    },
    fields: { [dailyCountKey(c.purchasesId, today)]: String(i % 10) },
  };
}
