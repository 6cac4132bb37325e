/// <reference lib="es2024.string" />
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { v1Operations } from '../../api/v1.routes.js';
import { adminOperations } from '../../api/admin.routes.js';
import type { Permission } from '../../shared/projects/index.js';
import { ADMIN_TOKEN } from '../helpers/context.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';
import { benignBody, STALL_SCREEN_MS, withinRatio } from './attack.js';

/*
 * Property-based fuzzing of EVERY `/v1` and `/admin/v1` operation (listed from the route
 * registries, so a new operation is fuzzed without touching this file), with valid keys and the
 * admin token, against the whole service (embedded ClickHouse, workers): generated bodies close
 * to each operation's schema (so they reach the handlers) and far from it (deep nesting, long
 * keys and strings, snake_case, wrong types, huge numbers, odd timestamps, unicode). Asserted:
 * never a 5xx, always the error-format body, and no event-loop stall: a body that blocked the loop
 * over 50 ms is sent again beside a benign body of the same size, and fails only if the stall
 * repeats and is far beyond the benign body's (an absolute bound flakes on a shared machine).
 * FUZZ_RUNS (default 60) bodies per operation within FUZZ_BUDGET_MS (default 2.5 s) each; about
 * a minute in all on 2 shared cores.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
/** Time budget per operation: slow ones (RunAggregations recomputes the project) stop early. */
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 10_000);

let s: TestService;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };
/**
 * RunAggregations recomputes every field of the project it names: the fuzzed project gathers
 * dozens of fields from the GetDataFields fuzzing, so one call can outlast the time budget on a
 * loaded machine. Its bodies name a project of its own instead (the handler's logic is the same).
 */
let quietProjectId: string;
const projectFor = (opName: string) => (opName === 'admin RunAggregations' ? quietProjectId : keys.projectId);

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, `fuzz${Date.now().toString(36)}`);
  quietProjectId = (await projectWithKeys(s, `fuzzq${Date.now().toString(36)}`)).projectId;
  // something for the generated names and ids to refer to, so bodies reach the handlers' logic
  const m = { 'x-api-key': keys.management };
  const setup: [string, Record<string, unknown>][] = [
    ['InsertSurface', { name: 'home' }],
    [
      'InsertTreatmentType',
      {
        treatmentTypeName: 'banner',
        lastModifiedBy: 't',
        surfaces: [{ surfaceName: 'home' }],
        contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 1000 }],
      },
    ],
    ['InsertDataField', { name: 'tier', userProperty: { dataType: 'STRING' } }],
    [
      'InsertTreatment',
      {
        name: 't',
        description: 'd',
        treatmentTypeName: 'banner',
        lastModifiedBy: 't',
        startTimestamp: '2026-01-01T00:00:00Z',
        shouldPublish: true,
        content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'hi {{tier|you}}' }] },
      },
    ],
  ];
  for (const [op, body] of setup) {
    const r = await s.post(`/v1/${op}`, { projectId: keys.projectId, ...body }, m);
    if (r.status !== 200) throw new Error(`${op}: ${JSON.stringify(r.body)}`);
  }
}, 120_000);

afterAll(async () => {
  if (process.env.FUZZ_VERBOSE) for (const [op, m] of statuses) console.log(op, JSON.stringify(Object.fromEntries(m)));
  await s?.stop();
}, 120_000);

// ------------------------------------------------------------------------------------------------
// Generated values

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

const oddTimestamp = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -400 * DAY, max: 2 * DAY }).map((d) => iso(Date.now() + d)) },
  fc.constantFrom(
    '2026-02-30T00:00:00Z',
    '2026-06-15T24:00:00Z',
    '2026-06-15T23:59:60Z',
    '2026-06-15T12:00:00',
    '2026-06-15T12:00:00+24:00',
    '0000-01-01T00:00:00Z',
    '1899-12-31T23:59:59Z',
    '1900-01-01T00:00:00Z',
    '2299-12-31T23:59:59.999999999Z',
    '9999-12-31T23:59:59Z',
    '1970-01-01T00:00:00Z',
    '2026-06-15 12:00:00z',
    '2026-06-15T12:00:00.1234567890Z',
  ),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

const weirdString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '𝔘𝔫𝔦',
    'é'.repeat(300),
    '{{a|b}}',
    `{{a${' '.repeat(5000)}`,
    '{{'.repeat(3000),
    'a,'.repeat(3000),
    '[[[[[[[[',
    '__proto__',
    'constructor',
    '1e309',
    '-0',
    'NaN',
  ),
  fc.integer({ min: 100, max: 70_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 20_000 }).map((n) => '_'.repeat(n)),
  oddTimestamp,
);

const weirdNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), Number('9223372036854775807'), 0.1, 1e-320, 100, 101, -1),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => n.toString()),
);

/**
 * Deep nesting, up to 200,000 levels: a placeholder string that `send` replaces with the nested
 * JSON text (JSON.stringify itself would overflow the stack on such a value).
 */
const deepValue = fc
  .tuple(fc.constantFrom('array', 'object'), fc.oneof(fc.integer({ min: 30, max: 40 }), fc.integer({ min: 40, max: 200_000 })))
  .map(([kind, depth]) => `@@deep:${kind}:${depth}@@`);

function expandDeep(payload: string): string {
  return payload.replace(/"@@deep:(array|object):(\d+)@@"/g, (_m, kind: string, n: string) => {
    const depth = Number(n);
    return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  });
}

const weirdKey = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'project_id', 'user_id', '_', '__', 'a__b', 'A_', 'é_ü'),
  fc.integer({ min: 200, max: 5000 }).map((n) => '_'.repeat(n)),
  fc.integer({ min: 5000, max: 300_000 }).map((n) => `${'_'.repeat(n)}!`),
);

const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    weirdString,
    weirdNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(weirdKey, tie('v'), { maxKeys: 5 }),
  ),
})).v;

const wrong = fc.oneof(anyJson, deepValue);

type Schema = Record<string, any>;

const toSnake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Values close to `schema`, with a wrong value now and then, so bodies reach the handlers too. */
function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 8) return anyJson;
  return fc.oneof({ weight: 40, arbitrary: closeTo(schema, depth) }, { weight: 1, arbitrary: wrong });
}

function closeTo(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...(schema.anyOf as Schema[]).map((sub) => closeTo(sub, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (schema.type) {
    case 'object': {
      const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
      const pattern = schema.patternProperties ? (Object.values(schema.patternProperties)[0] as Schema) : undefined;
      const required = new Set<string>(schema.required ?? []);
      // required fields nearly always present, optional ones half the time
      const fixed = fc
        .tuple(...props.map(([k, sub]) => fc.tuple(fc.constant(k), fromSchema(sub, depth + 1), fc.integer({ min: 0, max: 19 }))))
        .map((entries) => Object.fromEntries(entries.filter(([k, , dice]) => (required.has(k) ? dice > 0 : dice >= 10)).map(([k, v]) => [k, v])));
      const mapped = pattern
        ? fc.dictionary(fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), weirdKey), fromSchema(pattern, depth + 1), { maxKeys: 4 })
        : fc.constant({});
      const unknownField = fc.oneof({ weight: 15, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(weirdKey, anyJson) });
      return fc.tuple(fixed, mapped, fc.boolean(), unknownField).map(([obj, extra, snake, unknown]) => {
        const out: Record<string, unknown> = { ...extra };
        for (const [k, v] of Object.entries(obj as Record<string, unknown>)) out[snake ? toSnake(k) : k] = v;
        if (unknown) out[unknown[0]] = unknown[1];
        return out;
      });
    }
    case 'array':
      return fc.array(fromSchema((schema.items ?? {}) as Schema, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'string':
      if (typeof schema.pattern === 'string' && schema.pattern.includes('\\d{4}-')) return oddTimestamp;
      return fc.oneof(
        fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) }),
        fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/),
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            '1',
            '2',
            '0',
            'home',
            'banner',
            'body',
            'tier',
            'purchase',
            'u1',
            'en',
            'en-US',
            'LAST_7D',
            'IN_APP',
            'projects/p/topics/t',
          ),
        },
      );
    case 'integer':
      return fc.oneof(fc.integer({ min: -5, max: 1000 }), weirdNumber);
    case 'number':
      return fc.oneof(fc.double({ min: -1000, max: 1000, noNaN: true }), weirdNumber);
    case 'boolean':
      return fc.boolean();
    default:
      return anyJson;
  }
}

/**
 * Valid bodies of the busiest operations (projectId is added later): each generated case changes
 * one place of one of them (a weird value, a removed member, a snake_case name), so it reaches
 * the handler's own checks with exactly one oddity.
 */
const now = () => new Date().toISOString();
const SEEDS: Record<string, () => Record<string, unknown>> = {
  LogEvents: () => ({
    userId: 'u1',
    events: [
      {
        eventName: 'purchase',
        clientEventTimestamp: now(),
        insertId: 'i1',
        eventProperties: { n: { longValue: '5' }, at: { timestampValue: now() } },
        userProperties: { tier: { stringValue: 'gold' } },
      },
    ],
  }),
  GetTreatments: () => ({
    userId: 'u1',
    surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }],
    languageCode: 'en',
    contextualAttributes: [
      { key: 'tier', stringValue: 'gold' },
      { key: 'at', timestampValue: now() },
    ],
  }),
  LogTreatmentInteraction: () => ({
    userId: 'u1',
    treatmentId: '1',
    treatmentTrackingId: '1_r',
    surface: 'home',
    interactionType: 'VIEWED',
    interactionTimeMicros: String(Date.now() * 1000),
  }),
  InsertTreatment: () => ({
    name: 'n',
    description: 'd',
    treatmentTypeName: 'banner',
    lastModifiedBy: 't',
    startTimestamp: '2026-01-01T00:00:00Z',
    content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'hi {{tier|you}}' }] },
    eligibilityRules: { rules: [{ dataFieldId: '1', condition: 'ANY_OF', rhsValue: 'gold,silver' }] },
  }),
  UpdateTreatment: () => ({
    treatmentId: '1',
    lastModifiedBy: 't',
    endTimestamp: '2099-01-01T00:00:00Z',
    content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: '{{a}}' }] },
  }),
  GetDataFields: () => ({
    dataFieldParams: [
      {
        eventDataFieldParams: {
          eventSchemaName: 'purchase',
          propertyValueByPropertyName: { at: { timestampValue: now() } },
          dailyCountAggregation: { windowName: 'LAST_7D' },
        },
      },
    ],
  }),
  ExplainTreatments: () => ({ userId: 'u1', surfaces: [{ surface: 'home' }] }),
};

type Path = (string | number)[];

function paths(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...at, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

/** A copy of `seed` with the value at one path replaced, removed, or its name snake_cased. */
function mutateOne(seed: Record<string, unknown>, pick: number, kind: number, replacement: unknown): unknown {
  const copy = structuredClone(seed);
  const all = paths(copy).filter((p) => p.length > 0);
  const path = all[pick % all.length];
  let parent: any = copy;
  for (const p of path.slice(0, -1)) parent = parent[p];
  const last = path[path.length - 1];
  if (kind === 0 && !Array.isArray(parent)) delete parent[last];
  else if (kind === 1 && typeof last === 'string') {
    const v = parent[last];
    delete parent[last];
    parent[toSnake(last)] = v;
  } else parent[last] = replacement;
  return copy;
}

function seededBody(name: string): fc.Arbitrary<unknown> | undefined {
  const seed = SEEDS[name];
  if (!seed) return undefined;
  return fc
    .tuple(fc.nat(), fc.integer({ min: 0, max: 5 }), fc.oneof(weirdString, weirdNumber, wrong, fc.constant(null)))
    .map(([pick, kind, replacement]) => mutateOne(seed(), pick, kind, replacement));
}

// ------------------------------------------------------------------------------------------------
// Sending and measuring

interface Operation {
  name: string;
  path: string;
  body: Schema;
  headers: () => Record<string, string>;
}

const keyFor = (permissions: readonly Permission[]): string =>
  permissions.includes('TREATMENT_MANAGEMENT') ? keys.management : permissions.includes('DELIVERY') ? keys.delivery : keys.logEvents;

const operations: Operation[] = [
  ...v1Operations.map((op) => ({
    name: op.operation,
    path: `/v1/${op.operation}`,
    body: op.body as Schema,
    headers: () => ({ 'x-api-key': keyFor(op.permissions) }),
  })),
  ...adminOperations.map((op) => ({
    name: `admin ${op.operation}`,
    path: `/admin/v1/${op.operation}`,
    body: op.body as Schema,
    headers: () => ({ authorization: `Bearer ${ADMIN_TOKEN}` }),
  })),
];

const loop = monitorEventLoopDelay({ resolution: 5 });
/** operation → status → count, printed with FUZZ_VERBOSE=1 to see how deep the bodies reach */
const statuses = new Map<string, Map<number, number>>();

async function send(op: Operation, body: unknown): Promise<{ status: number; text: string; stallMs: number; size: number }> {
  return sendText(op, expandDeep(JSON.stringify(body)));
}

async function sendText(op: Operation, payload: string): Promise<{ status: number; text: string; stallMs: number; size: number }> {
  loop.reset();
  loop.enable();
  const res = await fetch(`${s.baseUrl}${op.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...op.headers() }, body: payload });
  const text = await res.text();
  loop.disable();
  if (process.env.FUZZ_VERBOSE && res.status === 400 && Math.random() < 0.05) console.log(op.name, text.slice(0, 200));
  const byStatus = statuses.get(op.name) ?? new Map<number, number>();
  statuses.set(op.name, byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1));
  return { status: res.status, text, stallMs: loop.max / 1e6, size: payload.length };
}

/** Whether a string (value or member name) anywhere in the body is not well-formed Unicode. */
function hasUnpairedSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return !value.isWellFormed();
  if (Array.isArray(value)) return value.some(hasUnpairedSurrogate);
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => !k.isWellFormed() || hasUnpairedSurrogate(v));
  return false;
}

function checkAnswer(op: Operation, body: unknown, r: { status: number; text: string }): void {
  const shown = JSON.stringify(body).slice(0, 300);
  expect(r.status, `${op.name} answered ${r.status} to ${shown}: ${r.text.slice(0, 300)}`).toBeLessThan(500);
  // an unpaired surrogate anywhere is refused before anything else looks at the body (413: too large first)
  if (hasUnpairedSurrogate(body)) expect([400, 413], `${op.name} answered ${r.status} to ${shown}`).toContain(r.status);
  if (r.status >= 400) {
    const err = JSON.parse(r.text).error;
    expect(err.code, r.text.slice(0, 300)).toBe(r.status);
    expect(typeof err.status).toBe('string');
    expect(typeof err.message).toBe('string');
    expect(Array.isArray(err.details)).toBe(true);
  }
}

describe('fuzzing every operation (no 5xx, no stall)', () => {
  it('lists every operation of both registries', () => {
    expect(operations.length).toBe(v1Operations.length + adminOperations.length);
    expect(operations.map((o) => o.name)).toEqual(expect.arrayContaining(['LogEvents', 'GetTreatments', 'InsertTreatment', 'admin CreateProject']));
  });

  it.each(operations.map((op) => [op.name, op] as const))('%s', { timeout: 60_000 }, async (_name, op) => {
    const projectBody = fc.tuple(fromSchema(op.body), fc.integer({ min: 0, max: 9 })).map(([b, dice]) =>
      // most bodies name the keys' project, so they pass authorisation and reach validation and the handler
      b !== null && typeof b === 'object' && !Array.isArray(b) && dice > 1 ? { ...(b as object), projectId: projectFor(op.name) } : b,
    );
    const seeded = seededBody(op.name.replace(/^admin /, ''));
    const seededWithProject = seeded?.map((b) =>
      b !== null && typeof b === 'object' && !Array.isArray(b) ? { projectId: projectFor(op.name), ...(b as object) } : b,
    );
    const bodies = seededWithProject
      ? fc.oneof({ weight: 5, arbitrary: seededWithProject }, { weight: 5, arbitrary: projectBody }, { weight: 1, arbitrary: wrong })
      : fc.oneof({ weight: 6, arbitrary: projectBody }, { weight: 1, arbitrary: wrong });
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        const r = await send(op, body);
        checkAnswer(op, body, r);
        if (r.stallMs >= STALL_SCREEN_MS) {
          // the same body again, beside a benign one of its size: a real stall repeats, far beyond it
          const benign = await sendText(op, benignBody(r.size));
          const again = await send(op, body);
          checkAnswer(op, body, again);
          const stall = Math.min(r.stallMs, again.stallMs);
          expect(
            withinRatio(stall, benign.stallMs),
            `${op.name} stalled the event loop ${stall.toFixed(0)} ms (benign ${benign.stallMs.toFixed(0)} ms) on ${JSON.stringify(body).slice(0, 300)}`,
          ).toBe(true);
        }
      }),
      { numRuns: RUNS, endOnFailure: true, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false },
    );
  });
});
