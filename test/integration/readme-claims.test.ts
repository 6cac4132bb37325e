import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TreatmentTransition } from '../../shared/treatments/treatment.store.js';
import { EMAIL_INTERACTION_TYPES, INTERACTION_TYPES } from '../../shared/ingestion/ingest.schemas.js';
import { call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { freePort, portAnswers } from '../helpers/child-service.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';

/** README claims ("Behaviour notes", "Ingestion") that no other test covered. */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

let t: TestApp;
let p: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  cleanups.push(() => t.close());
  p = await createProjectWithKeys(t);
});

async function mgmt(op: string, body: Record<string, unknown>): Promise<any> {
  const r = await call(t, op, p.management, { projectId: p.projectId, ...body });
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

describe('x-request-id', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const post = (headers: Record<string, string>, key = p.management) =>
    t.app.inject({ method: 'POST', url: '/v1/GetAllSurfaces', headers: { 'x-api-key': key, ...headers }, payload: { projectId: p.projectId } });

  it('a well-formed id (1–128 of letters, digits, . _ -) is echoed, on success and on errors', async () => {
    for (const id of ['abc-123', 'A.b_C-9', 'x'.repeat(128)]) expect((await post({ 'x-request-id': id })).headers['x-request-id']).toBe(id);
    const denied = await post({ 'x-request-id': 'trace-401' }, 'not-a-key');
    expect(denied.statusCode).toBe(401);
    expect(denied.headers['x-request-id']).toBe('trace-401');
  });

  it('a missing or malformed id is replaced by a fresh UUID', async () => {
    const seen = new Set<string>();
    const variants: Record<string, string>[] = [
      {},
      { 'x-request-id': '' },
      { 'x-request-id': 'has space' },
      { 'x-request-id': 'x'.repeat(129) },
      { 'x-request-id': 'new\u00e9' },
      { 'x-request-id': 'a;b' },
    ];
    for (const headers of variants) {
      const id = (await post(headers)).headers['x-request-id'] as string;
      expect(id).toMatch(UUID);
      seen.add(id);
    }
    expect(seen.size).toBe(6);
  });
});

describe('delivery language', () => {
  it('an empty languageCode means en (as does none); a malformed one is 400', async () => {
    await mgmt('InsertSurface', { name: 'lang' });
    await mgmt('InsertTreatmentType', {
      treatmentTypeName: 'lang',
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 'lang' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true }],
    });
    const byLanguage = (languageCode: string, stringValue: string) => ({
      languageCode: { languageCode },
      contentFields: [{ fieldName: 'title', stringValue }],
    });
    await mgmt('InsertTreatment', {
      name: 'l',
      description: 'd',
      treatmentTypeName: 'lang',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { contentByLanguage: [byLanguage('de', 'Hallo'), byLanguage('en', 'Hello'), byLanguage('fr', 'Bonjour')] },
    });
    const get = (extra: Record<string, unknown>) =>
      call(t, 'GetTreatments', p.delivery, { projectId: p.projectId, userId: 'u', surfaces: [{ surface: 'lang' }], ...extra });
    for (const extra of [{ languageCode: '' }, {}, { languageCode: 'en' }]) {
      const r = await get(extra);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.userTreatments[0].contentLanguageCode).toBe('en');
      expect(JSON.parse(r.body.userTreatments[0].treatmentContent)).toEqual({ title: 'Hello' });
    }
    expect(JSON.parse((await get({ languageCode: 'de' })).body.userTreatments[0].treatmentContent)).toEqual({ title: 'Hallo' });
    const bad = await get({ languageCode: 'not a tag!' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.status).toBe('INVALID_ARGUMENT');
  });
});

describe('concurrent UpdateTreatment: 409 ABORTED only after 20 consecutive conflicts', () => {
  /**
   * A concurrent writer that changes the treatment between every read and compare-and-set of the
   * first `conflicts` attempts. Its write is sent on the store's own connection right after the
   * read, so it reaches Redis before the store's compare-and-set: each such attempt conflicts.
   */
  function withConflictingWriter(conflicts: number): { attempts: () => number; restore: () => void } {
    const store = t.ctx.treatments.treatments;
    const original = store.update.bind(store);
    let attempts = 0;
    store.update = (projectId, treatmentId, transition: TreatmentTransition, meta) =>
      original(
        projectId,
        treatmentId,
        (current, type) => {
          attempts += 1;
          if (attempts <= conflicts)
            void t.ctx.redis.hset(t.ctx.keys.treatments(projectId), treatmentId, JSON.stringify({ ...current, description: `concurrent ${attempts}` }));
          return transition(current, type);
        },
        meta,
      );
    return { attempts: () => attempts, restore: () => void (store.update = original) };
  }

  let types = 0;
  async function treatment(): Promise<string> {
    types += 1;
    const typeName = `conflict-${types}`;
    await mgmt('InsertTreatmentType', {
      treatmentTypeName: typeName,
      lastModifiedBy: 't',
      contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 50 }],
    });
    const r = await mgmt('InsertTreatment', {
      name: 'c',
      description: 'd',
      treatmentTypeName: typeName,
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    });
    return r.treatment.treatmentId;
  }

  it('19 conflicts: the 20th attempt applies the update on top of the concurrent change', async () => {
    const id = await treatment();
    const writer = withConflictingWriter(19);
    try {
      const r = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'me', name: 'renamed' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(writer.attempts()).toBe(20);
      expect(r.body.treatment).toMatchObject({ name: 'renamed', description: 'concurrent 19' });
    } finally {
      writer.restore();
    }
  });

  it('20 conflicts: 409 ABORTED in the error body, safe to retry', async () => {
    const id = await treatment();
    const writer = withConflictingWriter(20);
    try {
      const r = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'me', name: 'renamed' });
      expect(writer.attempts()).toBe(20);
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ error: { code: 409, status: 'ABORTED', message: expect.stringContaining('retry'), details: [] } });
    } finally {
      writer.restore();
    }
    const retry = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'me', name: 'renamed' });
    expect(retry.status).toBe(200);
    expect(retry.body.treatment.name).toBe('renamed');
  });
});

describe('a 500 leaks nothing', () => {
  it('an unexpected error is the generic INTERNAL error body: no message, stack, path or class of the cause', async () => {
    const store = t.ctx.catalog.surfaces;
    const original = store.list.bind(store);
    store.list = async () => {
      const err = new TypeError('cannot read secret-column of row 42 (token=sk_live_abc) at /srv/app/shared/catalog/surface.store.ts:31');
      throw err;
    };
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/GetAllSurfaces',
        headers: { 'x-api-key': p.management },
        payload: { projectId: p.projectId },
      });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: { code: 500, status: 'INTERNAL', message: 'internal error; retry the request', details: [] } });
      for (const leak of ['secret', 'sk_live', '/srv/', 'surface.store', 'TypeError', 'at ', 'stack']) expect(res.body).not.toContain(leak);
      expect(res.headers['content-type']).toMatch(/application\/json/);
    } finally {
      store.list = original;
    }
    expect((await call(t, 'GetAllSurfaces', p.management, { projectId: p.projectId })).status).toBe(200);
  });
});

describe('LogEvents when Redis does not answer', () => {
  it('answers 503 UNAVAILABLE with Retry-After: 1 after the 1 s enqueue timeout, not a hang', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'tds-redis-'));
    const redis: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    cleanups.push(async () => void redis.kill('SIGKILL'));
    await waitUntil(() => portAnswers(port), 10_000);
    const app = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${port}` });
    cleanups.push(() => app.close());
    const keys = await createProjectWithKeys(app);
    const body = { projectId: keys.projectId, userId: 'u', events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString() }] };
    expect((await call(app, 'LogEvents', keys.logEvents, body)).status).toBe(200); // key and project now cached

    // Stopped, not killed: the connection stays open and nothing answers, so only the timeout can end the wait.
    redis.kill('SIGSTOP');
    try {
      const started = Date.now();
      const res = await app.app.inject({ method: 'POST', url: '/v1/LogEvents', headers: { 'x-api-key': keys.logEvents }, payload: body });
      const elapsed = Date.now() - started;
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
      expect(res.headers['retry-after']).toBe('1');
      // A floor, which load can only lengthen: the answer came from the timeout, not a refusal.
      // No ceiling: Redis is stopped until the answer, so a hang would fail the test's own timeout.
      expect(elapsed).toBeGreaterThanOrEqual(950);
    } finally {
      redis.kill('SIGCONT');
    }
    await waitUntil(async () => (await call(app, 'LogEvents', keys.logEvents, body)).status === 200, 15_000, 100);
  }, 60_000);
});

describe('through HTTP into ClickHouse', () => {
  let s: TestService;
  let k: Awaited<ReturnType<typeof projectWithKeys>>;

  beforeAll(async () => {
    s = await startTestService();
    cleanups.push(() => s.stop());
    k = await projectWithKeys(s, 'claims');
  }, 120_000);

  const post = (op: string, key: string, body: Record<string, unknown>) => s.post(`/v1/${op}`, { projectId: k.projectId, ...body }, { 'x-api-key': key });
  async function rows<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
    return s.clickhouse.query<T>(sql, { p: k.projectId, ...params });
  }
  async function treatmentOf(deliveryType: string): Promise<string> {
    const type = `type-${deliveryType}`;
    expect(
      (
        await post('InsertTreatmentType', k.management, {
          treatmentTypeName: type,
          deliveryType,
          lastModifiedBy: 't',
          surfaces: [{ surfaceName: 'inbox' }],
          contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 100 }],
        })
      ).status,
    ).toBe(200);
    const r = await post('InsertTreatment', k.management, {
      name: type,
      description: 'd',
      treatmentTypeName: type,
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    });
    expect(r.status).toBe(200);
    return r.body.treatment.treatmentId;
  }

  it('every interaction type is stored: the ten email types on an EMAIL treatment, the six others on any; email types elsewhere and UNSPECIFIED are 400', async () => {
    expect((await post('InsertSurface', k.management, { name: 'inbox' })).status).toBe(200);
    const email = await treatmentOf('EMAIL');
    const inApp = await treatmentOf('IN_APP');
    const micros = String(Date.now() * 1000);
    const interaction = (treatmentId: string, interactionType: string, n: number, userId = 'mail-user') =>
      post('LogTreatmentInteraction', k.delivery, {
        userId,
        treatmentId,
        treatmentTrackingId: `${treatmentId}_r${n}`,
        surface: 'inbox',
        interactionType,
        interactionTimeMicros: micros,
      });
    const emailTypes = [...EMAIL_INTERACTION_TYPES];
    expect(emailTypes).toHaveLength(10);
    for (const [i, type] of emailTypes.entries()) expect((await interaction(email, type, i)).status, type).toBe(200);
    for (const [i, type] of INTERACTION_TYPES.entries()) expect((await interaction(inApp, type, 100 + i, 'app-user')).status, type).toBe(200);
    for (const type of emailTypes) {
      const r = await interaction(inApp, type, 200, 'refused');
      expect(r.status, type).toBe(400);
      expect(r.body.error).toMatchObject({ status: 'INVALID_ARGUMENT', details: [expect.objectContaining({ field: 'interactionType' })] });
    }
    for (const treatmentId of [email, inApp]) {
      const r = await interaction(treatmentId, 'TREATMENT_INTERACTION_TYPE_UNSPECIFIED', 300, 'refused');
      expect(r.status).toBe(400);
      expect(r.body.error.status).toBe('INVALID_ARGUMENT');
      expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain('interactionType');
    }
    const typesOf = async (userId: string) =>
      (
        await rows<{ t: string }>('SELECT interaction_type AS t FROM interactions FINAL WHERE project_id = {p:String} AND user_id = {u:String} ORDER BY t', {
          u: userId,
        })
      ).map((r) => r.t);
    await waitUntil(async () => (await typesOf('mail-user')).length >= 10 && (await typesOf('app-user')).length >= 6, 30_000, 100);
    expect(await typesOf('mail-user')).toEqual([...emailTypes].sort());
    expect(await typesOf('app-user')).toEqual([...INTERACTION_TYPES].sort());
    expect(await typesOf('refused')).toEqual([]);
    const [row] = await rows<Record<string, string>>(
      'SELECT treatment_id, treatment_tracking_id, surface FROM interactions FINAL WHERE project_id = {p:String} AND user_id = {u:String} AND interaction_type = {t:String}',
      { u: 'mail-user', t: 'GROUP_RESUBSCRIBED' },
    );
    expect(row).toEqual({ treatment_id: email, treatment_tracking_id: `${email}_r9`, surface: 'inbox' });
  }, 60_000);

  it('the optional event fields reach the events row: ipAddress, deviceId, appVersionId, region, city, country, sessionId, preLoginTempUserId', async () => {
    const fields = {
      ipAddress: '203.0.113.7',
      deviceId: 'device-1',
      appVersionId: '4.2.0',
      region: 'Bavaria',
      city: 'München',
      country: 'DE',
      sessionId: 'session-9',
      preLoginTempUserId: 'anon-77',
    };
    const ts = new Date().toISOString();
    const r = await post('LogEvents', k.logEvents, {
      userId: 'field-user',
      events: [
        { eventName: 'opened', clientEventTimestamp: ts, insertId: 'all-fields', ...fields },
        { eventName: 'bare', clientEventTimestamp: ts, insertId: 'no-fields' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const read = () =>
      rows<Record<string, string>>(
        'SELECT insert_id, ip_address, device_id, app_version_id, region, city, country, session_id, pre_login_temp_user_id FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String} ORDER BY insert_id',
        { u: 'field-user' },
      );
    await waitUntil(async () => (await read()).length >= 2, 30_000, 100);
    const [full, bare] = await read();
    expect(full).toEqual({
      insert_id: 'all-fields',
      ip_address: fields.ipAddress,
      device_id: fields.deviceId,
      app_version_id: fields.appVersionId,
      region: fields.region,
      city: fields.city,
      country: fields.country,
      session_id: fields.sessionId,
      pre_login_temp_user_id: fields.preLoginTempUserId,
    });
    expect(bare).toEqual({
      insert_id: 'no-fields',
      ip_address: '',
      device_id: '',
      app_version_id: '',
      region: '',
      city: '',
      country: '',
      session_id: '',
      pre_login_temp_user_id: '',
    });
  }, 60_000);

  it('snake_case spellings of the event fields are accepted too', async () => {
    const ts = new Date().toISOString();
    const r = await post('LogEvents', k.logEvents, {
      user_id: 'snake-user',
      events: [
        {
          event_name: 'opened',
          client_event_timestamp: ts,
          insert_id: 's1',
          ip_address: '198.51.100.1',
          device_id: 'd',
          app_version_id: 'v',
          session_id: 's',
          pre_login_temp_user_id: 'anon',
        },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const read = () =>
      rows<Record<string, string>>(
        'SELECT ip_address, device_id, app_version_id, session_id, pre_login_temp_user_id FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}',
        { u: 'snake-user' },
      );
    await waitUntil(async () => (await read()).length >= 1, 30_000, 100);
    expect((await read())[0]).toEqual({ ip_address: '198.51.100.1', device_id: 'd', app_version_id: 'v', session_id: 's', pre_login_temp_user_id: 'anon' });
  }, 60_000);
});
