import { describe, expect, it } from 'vitest';
import fastJsonStringify from 'fast-json-stringify';
import { GetTreatmentsResponse, type DeliveryResponse } from '../../shared/delivery/index.js';
import { getTreatments } from '../../api/delivery/delivery.ops.js';
import { fixed, plan, run, treatment as planned } from '../helpers/delivery-plan.js';

/** What Fastify would write from the response schema (its compiled serializer). */
const bySchema = fastJsonStringify(GetTreatmentsResponse as never);
/** What GetTreatments writes instead. */
const responseJson = getTreatments.responseJson!;

const awkward = [
  '',
  'plain',
  'quote " backslash \\ slash /',
  'controls \u0000 \u0001 \b \f \n \r \t \u001f \u007f',
  'unicode é ü 中文 emoji 😀 and separators \u2028 \u2029',
  'lone surrogates \ud800 x \udfff',
  '{"title":"Offer for \\"Ada\\"","link":"https://example.com/?a=1&b=<2>"}',
];

function treatment(i: number, text: string): NonNullable<DeliveryResponse['userTreatments']>[number] {
  return {
    treatmentId: String(i + 1),
    treatmentTrackingId: `${i + 1}_${text}`,
    surface: `surface ${text}`,
    rank: String(i + 1),
    treatmentType: `type ${text}`,
    treatmentContent: JSON.stringify({ title: text, body: `${text} body` }),
    contentLanguageCode: text === '' ? 'en' : `en-${text.length}`,
  };
}

describe('GetTreatments 200 answers as JSON text', () => {
  it('gives the JSON value the response schema gives, member for member', () => {
    const responses: DeliveryResponse[] = [
      { responseId: 'r-empty' },
      { responseId: 'r-none', userTreatments: [] },
      { responseId: 'r-one', userTreatments: [treatment(0, 'plain')] },
      { responseId: 'r "quoted"', userTreatments: awkward.map((text, i) => treatment(i, text)) },
    ];
    for (const r of responses) {
      const text = responseJson(r);
      expect(JSON.parse(text)).toEqual(JSON.parse(bySchema(r)));
      // the same members in the same order as the schema's serializer writes them
      expect(Object.keys(JSON.parse(text))).toEqual(Object.keys(JSON.parse(bySchema(r))));
    }
  });

  it('writes an awkward content string back exactly (quotes, controls, unicode, lone surrogates)', () => {
    for (const text of awkward) {
      const r: DeliveryResponse = { responseId: 'r', userTreatments: [treatment(0, text)] };
      const parsed = JSON.parse(responseJson(r)) as Required<DeliveryResponse>;
      expect(parsed.userTreatments[0]).toEqual(r.userTreatments![0]);
      expect(JSON.parse(parsed.userTreatments[0].treatmentContent)).toEqual({ title: text, body: `${text} body` });
    }
  });

  it('gets answers from selectTreatments with exactly the schema members, in its order', () => {
    const p = plan([planned('1'), planned('2'), planned('3', '2'), planned('4', '3')]);
    let answers = 0;
    for (const r of [
      { surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }, { surface: 'checkout' }] },
      { surfaces: [{ surface: 'inbox' }] },
      { languageCode: 'fr' },
    ]) {
      const { response } = run(p, r, { ranking: fixed({ '1': 0.5, '2': 0.7 }) });
      // the same text, not only the same value: no member more, none missing, none moved
      expect(responseJson(response)).toBe(bySchema(response));
      answers += response.userTreatments?.length ?? 0;
    }
    expect(answers).toBe(6);
  });
});
