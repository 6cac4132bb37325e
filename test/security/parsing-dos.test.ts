import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { attack, expectNoStall, expectRejectedWithoutStall, listen, post } from './attack.js';

/*
 * Attack class: input that makes parsing super-linear or unbounded. Every attack goes through a
 * real listener; meanwhile /healthz must keep answering and the event loop must not stall for
 * more than a few times what a benign body of the same size costs, and the attack itself gets an
 * error-format 4xx, never a 5xx. A stall is measured on a shared machine, so a case is retried
 * twice before it fails: the attacks themselves cost seconds every time, a spike of load does not.
 */

let t: TestApp;
let url: string;
let k: ProjectKeys;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

beforeAll(async () => {
  t = await createTestApp();
  k = await createProjectWithKeys(t);
  url = await listen(t.app);
});

afterAll(async () => {
  await t?.close();
});

const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('snake_case keys of any length', { retry: 2 }, () => {
  it.each([60_000, 300_000, 1_000_000])('a key of %i underscores is 400 at once (it froze every listener for 3 s)', async (n) => {
    const body = `{"projectId":"${k.projectId}","userId":"u","events":[{"eventName":"e","clientEventTimestamp":"${new Date().toISOString()}","${'_'.repeat(n)}":1}]}`;
    const r = await attack(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents });
    expectRejectedWithoutStall(r, 400, /^events\[0\]\._{32}…$/);
    expect(r.result.body.error.status).toBe('INVALID_ARGUMENT');
    expect(r.result.text.length).toBeLessThan(2000);
  });

  it('a long key inside a user-data map is 400 too (property names are at most 256 characters)', async () => {
    const key = `a${'_b'.repeat(200_000)}`;
    const body = JSON.stringify({
      projectId: k.projectId,
      userId: 'u',
      events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString(), eventProperties: { [key]: { stringValue: 'x' } } }],
    });
    expectRejectedWithoutStall(await attack(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents }), 400, /^events\[0\]\.eventProperties\./);
  });

  it('thousands of long snake_case keys within the limit are rewritten in linear time and rejected as unknown fields', async () => {
    const keys: Record<string, number> = { projectId: 0 };
    for (let i = 0; i < 3000; i++) keys[`${'_'.repeat(250)}${i}`] = i;
    const body = JSON.stringify({ ...keys, projectId: k.projectId, userId: 'u', surfaces: [] });
    const r = await attack(url, '/v1/GetTreatments', body, { 'x-api-key': k.delivery });
    expectRejectedWithoutStall(r, 400);
  });

  const denseKeys = (prefix: string, budget: number) => {
    const keys: string[] = [];
    for (let i = 0, size = 0; size < budget; i++) {
      const key = `${prefix}${i}`;
      keys.push(`"${key}":1`);
      size += key.length + 5;
    }
    return keys;
  };

  it('one object of 30,000 keys is 400 before it is parsed (at most 1,000 members)', async () => {
    const body = `{"projectId":"${k.projectId}","userId":"u","surfaces":[],${denseKeys('a_b_', 1_000_000).join(',')}}`;
    const r = await attack(url, '/v1/GetTreatments', body, { 'x-api-key': k.delivery });
    expectRejectedWithoutStall(r, 400, '(body)');
    expect(r.result.body.error.details[0].description).toMatch(/more than 1000 members/);
  });

  it('one array of 200,000 items is 400 before it is parsed (at most 10,000 items)', async () => {
    const body = `{"projectId":"${k.projectId}","userId":"u","events":[${'{},'.repeat(200_000)}{}]}`;
    expectRejectedWithoutStall(await attack(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents }), 400, 'events');
  });

  it('1 MiB of short keys in objects of 1,000 is 400 before it is parsed (at most 100,000 members in all)', async () => {
    const object = `{${Array.from({ length: 1000 }, (_, i) => `"_${i}":1`).join(',')}}`;
    const body = `{"projectId":"${k.projectId}","userId":"u","surfaces":[{"surface":"s"}],"contextualAttributes":[${Array(110).fill(object).join(',')}]}`;
    const r = await attack(url, '/v1/GetTreatments', body, { 'x-api-key': k.delivery });
    expectRejectedWithoutStall(r, 400, '(body)');
    expect(r.result.body.error.details[0].description).toMatch(/more than 100000 members/);
  });

  it('arrays of 10,000 numbers are counted too', async () => {
    const array = `[${Array(9_999).fill(1).join(',')}]`;
    const body = `{"projectId":"${k.projectId}","userId":"u","events":[${Array(50).fill(array).join(',')}]}`;
    const r = await attack(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents });
    expectRejectedWithoutStall(r, 400, '(body)');
  });

  it('just under the limits, 1 MiB of unknown snake_case keys stops at the 101st unknown name with a bounded answer', async () => {
    const keys = denseKeys('a_ba_ba_ba_b_', 1_000_000);
    const objects: string[] = [];
    for (let i = 0; i < keys.length; i += 1000) objects.push(`{${keys.slice(i, i + 1000).join(',')}}`);
    const body = `{"projectId":"${k.projectId}","userId":"u","surfaces":[{"surface":"s"}],"contextualAttributes":[${objects.join(',')}]}`;
    const r = await attack(url, '/v1/GetTreatments', body, { 'x-api-key': k.delivery });
    expectRejectedWithoutStall(r, 400, '(body)');
    expect(r.result.body.error.details[0].description).toMatch(/more than 100 unknown fields/);
    expect(r.result.text.length, 'the 400 lists a bounded number of problems').toBeLessThan(50_000);
  });

  it('the admin API has the same limits', async () => {
    const body = `{"projectId":"x","${'_'.repeat(300_000)}":1}`;
    expectRejectedWithoutStall(await attack(url, '/admin/v1/CreateProject', body, admin), 400);
  });
});

describe('deep nesting', { retry: 2 }, () => {
  const cases: [string, string, Record<string, string>, (nest: string) => string][] = [
    ['LogEvents', '/v1/LogEvents', {}, (n) => `{"projectId":"PID","userId":"u","events":${n}}`],
    ['GetTreatments', '/v1/GetTreatments', {}, (n) => `{"projectId":"PID","userId":"u","surfaces":[{"surface":"s"}],"contextualAttributes":${n}}`],
    ['InsertTreatment', '/v1/InsertTreatment', {}, (n) => `{"projectId":"PID","name":"n","content":${n}}`],
    ['GetDataFields', '/v1/GetDataFields', {}, (n) => `{"projectId":"PID","dataFieldParams":${n}}`],
    ['admin CreateProject', '/admin/v1/CreateProject', admin, (n) => `{"projectId":"x","extra":${n}}`],
    ['admin ExplainTreatments', '/admin/v1/ExplainTreatments', admin, (n) => `{"projectId":"PID","userId":"u","surfaces":${n}}`],
  ];
  const keyOf = (path: string) => (path.includes('LogEvents') ? k.logEvents : path.includes('GetTreatments') ? k.delivery : k.management);

  it.each(cases)('%s: 100,000 nested arrays are 400 (they answered 500: camelize overflowed the stack)', async (_name, path, headers, body) => {
    const text = body(nestedArrays(100_000)).replace('PID', k.projectId);
    const r = await attack(url, path, text, { 'x-api-key': keyOf(path), ...headers });
    expectRejectedWithoutStall(r, 400);
    expect(r.result.body.error.details[0].description).toMatch(/nested more than 32 levels/);
  });

  it.each(cases)('%s: 100,000 nested objects are 400', async (_name, path, headers, body) => {
    const text = body(nestedObjects(100_000)).replace('PID', k.projectId);
    expectRejectedWithoutStall(await attack(url, path, text, { 'x-api-key': keyOf(path), ...headers }), 400);
  });

  it('the 400 names the JSON path where the limit was crossed', async () => {
    const text = `{"projectId":"${k.projectId}","userId":"u","events":[{"eventProperties":${nestedObjects(40)}}]}`;
    const r = await post(url, '/v1/LogEvents', text, { 'x-api-key': k.logEvents });
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].field).toMatch(/^events\[0\]\.eventProperties(\.a)+$/);
  });

  it('a body within the limits is still served (32 levels are enough for every operation)', async () => {
    const body = JSON.stringify({
      projectId: k.projectId,
      userId: 'u',
      events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString(), event_properties: { p_q: { string_value: 'x' } } }],
    });
    const r = await post(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents });
    expect(r.status, r.text).toBe(200);
  });
});

describe('template text and rule lists stored with a management key', { retry: 2 }, () => {
  /** A project of its own per case, so one case's megabyte of content is not delivered in the next. */
  async function project(): Promise<{ keys: ProjectKeys; dataFieldId: string }> {
    const keys = await createProjectWithKeys(t);
    const m = { 'x-api-key': keys.management };
    const ok = async (op: string, body: unknown) => {
      const r = await post(url, `/v1/${op}`, JSON.stringify({ projectId: keys.projectId, ...(body as object) }), m);
      if (r.status !== 200) throw new Error(`${op}: ${r.text}`);
      return r.body;
    };
    await ok('InsertSurface', { name: 'home' });
    await ok('InsertTreatmentType', {
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 'home' }],
      contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 1_000_000 }],
    });
    const dataFieldId = (await ok('InsertDataField', { name: 'tier', userProperty: { dataType: 'STRING' } })).dataField.dataFieldId;
    return { keys, dataFieldId };
  }

  const insert = (projectId: string, content: string, rules: unknown[] = []) =>
    JSON.stringify({
      projectId,
      name: 'attack',
      description: 'd',
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: content }] },
      eligibilityRules: { rules },
    });
  const deliver = (projectId: string, attrs: unknown[] = []) =>
    JSON.stringify({ projectId, userId: 'u1', surfaces: [{ surface: 'home' }], contextualAttributes: attrs });

  it.each([
    ['"{{a" + 200,000 spaces', `{{a${' '.repeat(200_000)}`],
    ['"{{" + " a" × 100,000', `{{${' a'.repeat(100_000)}`],
    ['"{{" × 100,000', '{{'.repeat(100_000)],
    ['"{{a|" + 200,000 spaces', `{{a|${' '.repeat(200_000)}`],
    ['"{{a}" × 50,000', '{{a}'.repeat(50_000)],
  ])('content %s is stored, compiled and rendered without a stall (16,000 spaces took 0.42 s)', async (_name, content) => {
    const { keys } = await project();
    const stored = await attack(url, '/v1/InsertTreatment', insert(keys.projectId, content), { 'x-api-key': keys.management });
    expect(stored.result.status, stored.result.text.slice(0, 300)).toBe(200);
    expectNoStall(stored);
    // the first GetTreatments of the project compiles the new catalogue; each renders the content
    for (let i = 0; i < 2; i++) {
      const delivered = await attack(url, '/v1/GetTreatments', deliver(keys.projectId), { 'x-api-key': keys.delivery });
      expect(delivered.result.status, delivered.result.text.slice(0, 300)).toBe(200);
      expectNoStall(delivered);
    }
  });

  it.each([
    ['a comma list of 32,000 items', 'ANY_OF', 'a,'.repeat(32_000)],
    ['a JSON list of 6,000 strings', 'ANY_OF', JSON.stringify(Array.from({ length: 6_000 }, (_, i) => `v${i}`))],
    ['a CONTAINS_ANY_OF list of 6,000 substrings', 'CONTAINS_ANY_OF', JSON.stringify(Array.from({ length: 6_000 }, (_, i) => `v${i}`))],
  ])('an rhs of %s is parsed once and evaluated against a 65,536-character attribute without a stall', async (_name, condition, rhsValue) => {
    const { keys, dataFieldId } = await project();
    const stored = await attack(url, '/v1/InsertTreatment', insert(keys.projectId, 'x', [{ dataFieldId, condition, rhsValue }]), {
      'x-api-key': keys.management,
    });
    expect(stored.result.status, stored.result.text.slice(0, 300)).toBe(200);
    expectNoStall(stored);
    for (let i = 0; i < 3; i++) {
      const delivered = await attack(url, '/v1/GetTreatments', deliver(keys.projectId, [{ key: 'tier', stringValue: 'z'.repeat(65_536) }]), {
        'x-api-key': keys.delivery,
      });
      expect(delivered.result.status, delivered.result.text.slice(0, 300)).toBe(200);
      expectNoStall(delivered);
    }
  });

  it.each([
    ['nested 30,000 deep', `${'['.repeat(30_000)}${']'.repeat(30_000)}`],
    ['a number list of 6,000 large numbers', `[${Array.from({ length: 6_000 }, () => '9'.repeat(9)).join(',')}]`],
    ['with unbalanced brackets', `[${'"a",'.repeat(16_000)}`],
  ])('an rhs list %s answers at once', async (_name, rhsValue) => {
    const { keys, dataFieldId } = await project();
    const r = await attack(url, '/v1/InsertTreatment', insert(keys.projectId, 'x', [{ dataFieldId, condition: 'ANY_OF', rhsValue }]), {
      'x-api-key': keys.management,
    });
    expect(r.result.status).toBeLessThan(500);
    expectNoStall(r);
  });
});
