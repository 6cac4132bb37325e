import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { call, createProjectWithKeys, createTestApp, okBody, type ProjectKeys, type TestApp } from './context.js';

/** The fixed "now" of the treatment tests; each test starts there (`app().clock.set` moves it). */
export const T0 = Date.parse('2026-03-01T12:00:00.000Z');
export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const iso = (ms: number): string => new Date(ms).toISOString();

export interface Catalog extends ProjectKeys {
  dataFields: { age: string; vip: string; country: string };
  purchaseEventId: string;
}

export const content = (title = 'Hi') => ({
  contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
  languageAgnosticContentFields: [{ fieldName: 'link', stringValue: 'https://example.com' }],
});

/** An InsertTreatment body of a `card` starting an hour before T0. */
export function insertBody(p: ProjectKeys, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    projectId: p.projectId,
    name: 'Welcome',
    description: 'first screen',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: iso(T0 - HOUR),
    content: content(),
    ...overrides,
  };
}

export const statuses = (tr: any) => tr.versions.map((v: any) => [v.versionNumber, v.status]);

export function expectInvalid(res: { status: number; body: any }, field: string, code = 'INVALID_ARGUMENT'): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.status).toBe(code);
  expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
}

/**
 * One test app per file at the fixed clock T0, reset before each test, and the management calls
 * the treatment tests make against it.
 */
export function useTreatmentApp() {
  let t: TestApp | undefined;
  beforeAll(async () => {
    t = await createTestApp({}, { fixedNow: T0 });
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => {
    app().clock.set(T0);
  });
  const app = (): TestApp => {
    if (t === undefined) throw new Error('the test app is not started');
    return t;
  };
  const send = (operation: string, key: string | undefined, body: unknown, listener?: FastifyInstance) => call(app(), operation, key, body, listener);
  const ok = (operation: string, key: string, body: unknown): Promise<any> => okBody(send(operation, key, body), operation);

  /** A project with surfaces home/inbox/banner, types card (home, inbox) and email (banner), three data fields. */
  const setupCatalog = async (deliveryEndpoint: 'BASE' | 'ALT' = 'BASE'): Promise<Catalog> => {
    const p = await createProjectWithKeys(app(), undefined, deliveryEndpoint);
    const m = p.management;
    for (const name of ['home', 'inbox', 'banner']) await ok('InsertSurface', m, { projectId: p.projectId, name });
    await ok('InsertTreatmentType', m, {
      projectId: p.projectId,
      treatmentTypeName: 'card',
      lastModifiedBy: 'setup',
      surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }],
      contentFieldTypes: [
        { fieldName: 'title', maximumLengthAllowed: 20, isPerLanguage: true },
        { fieldName: 'body', maximumLengthAllowed: 100, isPerLanguage: true },
        { fieldName: 'link', maximumLengthAllowed: 200 },
      ],
    });
    await ok('InsertTreatmentType', m, {
      projectId: p.projectId,
      treatmentTypeName: 'email',
      lastModifiedBy: 'setup',
      deliveryType: 'EMAIL',
      surfaces: [{ surfaceName: 'banner' }],
      contentFieldTypes: [{ fieldName: 'subject', maximumLengthAllowed: 50, isPerLanguage: true }],
    });
    const field = async (name: string, dataType: string) =>
      (await ok('InsertDataField', m, { projectId: p.projectId, name, userProperty: { dataType } })).dataField.dataFieldId as string;
    // a target action names an event schema of the project
    const purchase = (await ok('InsertEventSchema', m, { projectId: p.projectId, eventName: 'purchase' })).eventSchema.eventId as string;
    return {
      ...p,
      purchaseEventId: purchase,
      dataFields: { age: await field('age', 'INTEGER'), vip: await field('vip', 'BOOLEAN'), country: await field('country', 'STRING') },
    };
  };

  return {
    app,
    /** `call` against this file's app. */
    send,
    ok,
    setupCatalog,
    insert: async (p: ProjectKeys, overrides: Record<string, unknown> = {}): Promise<any> =>
      (await ok('InsertTreatment', p.management, insertBody(p, overrides))).treatment,
    update: async (p: ProjectKeys, body: Record<string, unknown>): Promise<any> =>
      (await ok('UpdateTreatment', p.management, { projectId: p.projectId, lastModifiedBy: 'bob', ...body })).treatment,
    get: async (p: ProjectKeys, treatmentId: string): Promise<any> =>
      (await ok('GetTreatment', p.management, { projectId: p.projectId, treatmentId })).treatment,
    getAll: async (p: ProjectKeys, body: Record<string, unknown> = {}): Promise<any[]> =>
      (await ok('GetAllTreatments', p.management, { projectId: p.projectId, ...body })).treatments,
  };
}
