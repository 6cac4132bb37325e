import { describe, expect, it } from 'vitest';
import { camelizeKeys, MAX_UNKNOWN_FIELDS, schemaFieldNames, snakeToCamel } from '../../shared/platform/http/camelize.js';
import { InvalidArgumentError } from '../../shared/platform/errors.js';

describe('snake_case input', () => {
  it('rewrites snake_case names to camelCase', () => {
    expect(snakeToCamel('project_id')).toBe('projectId');
    expect(snakeToCamel('client_event_timestamp')).toBe('clientEventTimestamp');
    expect(snakeToCamel('alreadyCamel')).toBe('alreadyCamel');
  });

  it('rewrites nested objects and arrays but keeps the customer’s property names', () => {
    const body = {
      project_id: 'p',
      events: [
        {
          event_name: 'e',
          event_properties: { Some_Prop: { long_value: '5' }, plain: { stringValue: 'x' } },
          user_properties: { first_name: { string_value: 'Ann' } },
        },
      ],
      data_field_params: [{ event_data_field_params: { property_value_by_property_name: { order_type: { string_value: 'gift' } } } }],
    };
    expect(camelizeKeys(body)).toEqual({
      projectId: 'p',
      events: [
        {
          eventName: 'e',
          eventProperties: { Some_Prop: { longValue: '5' }, plain: { stringValue: 'x' } },
          userProperties: { first_name: { stringValue: 'Ann' } },
        },
      ],
      dataFieldParams: [{ eventDataFieldParams: { propertyValueByPropertyName: { order_type: { stringValue: 'gift' } } } }],
    });
  });

  it('returns a camelCase body itself, without copying (hot path)', () => {
    const body = { projectId: 'p', events: [{ eventName: 'e', eventProperties: { a_b: { stringValue: 'x' } } }] };
    expect(camelizeKeys(body)).toBe(body);
  });

  it('does not mutate its input', () => {
    const body = { project_id: 'p', list: [{ a_b: 1 }] };
    const copy = JSON.parse(JSON.stringify(body));
    camelizeKeys(body);
    expect(body).toEqual(copy);
  });

  it("with the schemas' field names, stops at the first unknown name past the limit", () => {
    const known = schemaFieldNames([
      { type: 'object', properties: { projectId: { type: 'string' }, events: { type: 'array', items: { type: 'object', properties: { eventName: {} } } } } },
    ]);
    expect([...known].sort()).toEqual(['eventName', 'events', 'projectId']);
    const few = Object.fromEntries(Array.from({ length: MAX_UNKNOWN_FIELDS }, (_, i) => [`x_${i}`, 1]));
    expect(camelizeKeys({ project_id: 'p', ...few }, known)).toMatchObject({ projectId: 'p', x0: 1 });
    expect(() => camelizeKeys({ project_id: 'p', ...few, one_more: 1 }, known)).toThrow(InvalidArgumentError);
    // user-data map keys are the customer's own names, never counted
    const map = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p_${i}`, { stringValue: 'x' }]));
    expect(() => camelizeKeys({ events: [{ eventProperties: map }] }, new Set(['events', 'eventProperties', 'stringValue']))).not.toThrow();
  });
});
