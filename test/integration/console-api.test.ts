import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

// The web console's server side: the built app served at /console, nothing else
// of the file system reachable through it, and modificationSource on the management operations.

let t: TestApp;
let p: ProjectKeys;

beforeAll(async () => {
  execFileSync('bash', ['infra/scripts/ensure-console-built.sh'], { stdio: 'inherit' });
  t = await createTestApp();
  p = await createProjectWithKeys(t);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const mgmt = (operation: string, body: Record<string, unknown>) => call(t, operation, p.management, { projectId: p.projectId, ...body });

describe('GET /console', () => {
  it('serves the app, its bundles with their content types, and index.html for app routes', async () => {
    expect((await get('/console')).statusCode).toBe(302);
    const index = await get('/console/');
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toMatch(/^text\/html/);
    expect(index.headers['content-security-policy']).toContain("default-src 'self'");
    const script = /src="\/console\/(assets\/[^"]+\.js)"/.exec(index.body)?.[1];
    const style = /href="\/console\/(assets\/[^"]+\.css)"/.exec(index.body)?.[1];
    expect(script).toBeDefined();
    const js = await get(`/console/${script}`);
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.headers['cache-control']).toContain('immutable');
    expect((await get(`/console/${style}`)).headers['content-type']).toMatch(/^text\/css/);
    const deep = await get('/console/treatments/12');
    expect(deep.statusCode).toBe(200);
    expect(deep.body).toBe(index.body);
  });

  it('answers 404 in the error body format for a missing file and never leaves its folder', async () => {
    const missing = await get('/console/assets/nope.js');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.details).toBeDefined();
    for (const url of [
      '/console/../package.json',
      '/console/..%2f..%2fpackage.json',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/assets/..%2f..%2f..%2fpackage.json',
      '/console/..%5c..%5cpackage.json',
      '/console/%2e%2e%2f%2e%2e%2f.env',
      '/console/%E0%A4%A',
    ]) {
      const r = await get(url);
      expect(r.body, url).not.toContain('treatment-delivery-service');
      expect([200, 400, 404], url).toContain(r.statusCode);
      if (r.statusCode === 200) expect(r.headers['content-type'], url).toMatch(/^text\/html/);
    }
  });

  it('is not on the alternate (delivery) listener', async () => {
    expect((await t.alt.inject({ method: 'GET', url: '/console/' })).statusCode).toBe(404);
  });
});

describe('modificationSource', () => {
  it('is recorded on treatment types and treatments, API by default, and only API or TDS_CONSOLE', async () => {
    await mgmt('InsertSurface', { name: 'home' });
    const fields = [{ fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true }];
    const byConsole = await mgmt('InsertTreatmentType', {
      treatmentTypeName: 'banner',
      contentFieldTypes: fields,
      surfaces: [{ surfaceName: 'home' }],
      lastModifiedBy: 'Ada',
      modificationSource: 'TDS_CONSOLE',
    });
    expect(byConsole.status, JSON.stringify(byConsole.body)).toBe(200);
    expect(byConsole.body.treatmentType).toMatchObject({ lastModifiedBy: 'Ada', modificationSource: 'TDS_CONSOLE' });
    const byApi = await mgmt('UpdateTreatmentType', {
      treatmentTypeId: byConsole.body.treatmentType.treatmentTypeId,
      contentFieldTypes: fields,
      lastModifiedBy: 'script',
    });
    expect(byApi.body.treatmentType.modificationSource).toBe('API');
    const bad = await mgmt('InsertTreatmentType', {
      treatmentTypeName: 'other',
      contentFieldTypes: fields,
      lastModifiedBy: 'Ada',
      modificationSource: 'SPREADSHEET',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toContain('modificationSource');

    const content = { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'Hi' }] }] };
    const inserted = await mgmt('InsertTreatment', {
      name: 'Welcome',
      description: '',
      treatmentTypeName: 'banner',
      lastModifiedBy: 'Ada',
      modificationSource: 'TDS_CONSOLE',
      startTimestamp: new Date(Date.now() - 60_000).toISOString(),
      content,
      shouldPublish: true,
    });
    expect(inserted.status, JSON.stringify(inserted.body)).toBe(200);
    expect(inserted.body.treatment).toMatchObject({ lastModifiedBy: 'Ada', modificationSource: 'TDS_CONSOLE' });
    const treatmentId = inserted.body.treatment.treatmentId;
    const edited = await mgmt('UpdateTreatment', { treatmentId, name: 'Welcome!', lastModifiedBy: 'script' });
    expect(edited.body.treatment.modificationSource).toBe('API');
    const paused = await mgmt('UpdateTreatment', { treatmentId, shouldPause: true, lastModifiedBy: 'Ada', modificationSource: 'TDS_CONSOLE' });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body.treatment).toMatchObject({ status: 'PAUSED', modificationSource: 'TDS_CONSOLE' });
    const badUpdate = await mgmt('UpdateTreatment', { treatmentId, name: 'x', lastModifiedBy: 'Ada', modificationSource: 'tds_console' });
    expect(badUpdate.status).toBe(400);
  });
});
