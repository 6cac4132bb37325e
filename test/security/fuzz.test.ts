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
import { expandDeep, fromSchema, toSnake, weirdNumber, weirdString, wrong, type Schema } from '../helpers/fuzz-values.js';

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
