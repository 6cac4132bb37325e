import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v1Operations } from '../../api/v1.routes.js';
import { adminOperations } from '../../api/admin.routes.js';
import { createTestApp, type TestApp } from '../helpers/context.js';
import { openApiText } from '../../api/http/openapi-export.js';

/** One schema per wire shape serves validation and the API description (issue: "API description"). */
let t: TestApp;
let doc: any;

beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /openapi.json', () => {
  it('documents every operation with its request body, its answer and the error body', () => {
    const paths = [...v1Operations.map((o) => `/v1/${o.operation}`), ...adminOperations.map((o) => `/admin/v1/${o.operation}`)];
    for (const path of paths) {
      const post = doc.paths[path]?.post;
      expect(post, path).toBeDefined();
      expect(post.requestBody?.content?.['application/json']?.schema, path).toBeDefined();
      expect(post.responses['200'], path).toBeDefined();
      const error = post.responses['4XX'] ?? post.responses['4xx'];
      expect(error?.content?.['application/json']?.schema?.properties?.error?.properties?.status, path).toBeDefined();
    }
  });

  it('is the openapi.json committed at the repository root (else: npm run openapi)', () => {
    const committed = readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8');
    expect(committed === openApiText(doc), 'openapi.json is out of date: run npm run openapi').toBe(true);
    expect(JSON.parse(committed).paths['/v1/GetTreatments'].post.operationId).toBe('GetTreatments');
  });

  it('serves a browsable page at /docs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('swagger');
  });
});
