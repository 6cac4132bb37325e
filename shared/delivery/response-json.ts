/**
 * GetTreatments' 200 answer as JSON text, written by hand for its one shape (`GetTreatmentsResponse`):
 * the schema's members in its order, each string through the engine's own `JSON.stringify`.
 *
 * Why not the schema's compiled serializer (fast-json-stringify): every answer carries each
 * returned treatment's content as a JSON object *string*, hundreds of characters of quotes to
 * escape, and its escaping runs in JavaScript a character at a time (2–3 % of the API's time per
 * request under load); the engine's escaping is native. The text is the same JSON value the
 * schema's serializer gives (`test/unit/delivery-response-json.test.ts` compares them), so the
 * schema stays the contract and the OpenAPI document.
 */
import type { DeliveryResponse } from './delivery.js';

export function deliveryResponseJson(response: DeliveryResponse): string {
  let out = '{"responseId":' + JSON.stringify(response.responseId);
  const treatments = response.userTreatments;
  if (treatments !== undefined) {
    out += ',"userTreatments":[';
    for (let i = 0; i < treatments.length; i++) {
      const u = treatments[i];
      out +=
        (i === 0 ? '{"treatmentId":' : ',{"treatmentId":') +
        JSON.stringify(u.treatmentId) +
        ',"treatmentTrackingId":' +
        JSON.stringify(u.treatmentTrackingId) +
        ',"surface":' +
        JSON.stringify(u.surface) +
        ',"rank":' +
        JSON.stringify(u.rank) +
        ',"treatmentType":' +
        JSON.stringify(u.treatmentType) +
        ',"treatmentContent":' +
        JSON.stringify(u.treatmentContent) +
        ',"contentLanguageCode":' +
        JSON.stringify(u.contentLanguageCode) +
        '}';
    }
    out += ']';
  }
  return out + '}';
}
