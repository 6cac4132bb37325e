import { afterAll, beforeAll, expect } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from './context.js';

/** The catalogue tests' app: project `p` with surfaces home, banner and inbox, and an `other` project. */
export async function startCatalogApp(): Promise<{ t: TestApp; p: ProjectKeys; other: ProjectKeys }> {
  const t = await createTestApp();
  const p = await createProjectWithKeys(t);
  const other = await createProjectWithKeys(t);
  for (const name of ['home', 'banner', 'inbox']) {
    const r = await call(t, 'InsertSurface', p.management, { projectId: p.projectId, name });
    expect(r.status).toBe(200);
  }
  return { t, p, other };
}

/** A management call on `p`'s project. */
export const managementCall = (t: TestApp, p: ProjectKeys, operation: string, body: Record<string, unknown>) =>
  call(t, operation, p.management, { projectId: p.projectId, ...body });

export function expectError(r: { status: number; body: any }, status: number, code: string, field?: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.status).toBe(code);
  expect(r.body.error.code).toBe(status);
  if (field) expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

export const fields = [
  { fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true },
  { fieldName: 'link', maximumLengthAllowed: 200 },
];

let typeCounter = 0;
/** Inserts a treatment type of a fresh name in `p`'s project. */
export async function insertType(t: TestApp, p: ProjectKeys, extra: Record<string, unknown> = {}) {
  typeCounter += 1;
  const r = await managementCall(t, p, 'InsertTreatmentType', {
    treatmentTypeName: `type-${typeCounter}`,
    contentFieldTypes: fields,
    lastModifiedBy: 'alice',
    ...extra,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.treatmentType;
}

/** One catalogue app per test file (started before its tests, closed after), and its calls on `p`. */
export function useCatalogApp() {
  let state: Awaited<ReturnType<typeof startCatalogApp>> | undefined;
  beforeAll(async () => {
    state = await startCatalogApp();
  });
  afterAll(async () => {
    await state?.t.close();
  });
  const get = () => {
    if (state === undefined) throw new Error('the catalogue app is not started');
    return state;
  };
  return {
    get t() {
      return get().t;
    },
    get p() {
      return get().p;
    },
    get other() {
      return get().other;
    },
    mgmt: (operation: string, body: Record<string, unknown>) => managementCall(get().t, get().p, operation, body),
    insertType: (extra: Record<string, unknown> = {}) => insertType(get().t, get().p, extra),
  };
}
