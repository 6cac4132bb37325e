import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { call, callOk, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';

/**
 * The decision log's bounds and its off switch, against the real Redis. No workers run here, so
 * the decisions queue only grows: as it would while ClickHouse refuses inserts.
 */
const DAY = 86_400_000;

async function catalogue(t: TestApp, k: ProjectKeys): Promise<string> {
  const m = (op: string, body: Record<string, unknown>) => callOk(t, op, k.management, { projectId: k.projectId, ...body });
  await m('InsertSurface', { name: 'home' });
  await m('InsertTreatmentType', {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  const r = await m('InsertTreatment', {
    name: 'a',
    description: 'a',
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    startTimestamp: new Date(Date.now() - DAY).toISOString(),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'hi' }] },
  });
  return r.treatment.treatmentId;
}

describe('decision log bounds', () => {
  let t: TestApp;
  let k: ProjectKeys;
  let queue: Queue;
  beforeAll(async () => {
    t = await createTestApp({ DECISION_LOG_MAX_BACKLOG: '1000', DECISION_LOG_FLUSH_MS: '5' });
    k = await createProjectWithKeys(t);
    await catalogue(t, k);
    queue = new Queue(QUEUE.decisions, { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(t.ctx.config.redisPrefix), skipVersionCheck: true });
  });
  afterAll(async () => {
    await queue?.close();
    await t?.close();
  });

  it('drops and counts decisions beyond DECISION_LOG_MAX_BACKLOG while nothing stores them; delivery never fails', async () => {
    const records = async () => {
      const jobs = await queue.getJobs(['wait', 'delayed', 'prioritized', 'active']);
      return jobs.reduce((n, j) => n + (j.data.packed?.length ?? 0), 0);
    };
    let sent = 0;
    // in rounds, so the producer polls the queue's backlog between them
    for (let round = 0; round < 12; round++) {
      const answers = await Promise.all(
        Array.from({ length: 250 }, (_, i) =>
          call(t, 'GetTreatments', k.delivery, { projectId: k.projectId, userId: `u${round}-${i}`, surfaces: [{ surface: 'home' }] }),
        ),
      );
      expect(answers.every((a) => a.status === 200 && a.body.userTreatments.length === 1)).toBe(true);
      sent += answers.length;
      await new Promise((r) => setTimeout(r, 1100));
    }
    await waitUntil(async () => t.ctx.metrics.decisionLog.queued + t.ctx.metrics.decisionLog.dropped === sent, 10_000);
    const { queued, dropped } = t.ctx.metrics.decisionLog;
    expect(dropped).toBeGreaterThan(0);
    // the queue counts jobs, so the backlog in responses is an estimate (jobs × recent responses
    // per job), read once a second: the bound holds within a factor, not to the record
    expect(await records()).toBe(queued);
    expect(queued).toBeLessThanOrEqual(2000);
    expect(queued).toBeGreaterThanOrEqual(1000);
    const text = await t.ctx.metrics.render();
    expect(text).toMatch(new RegExp(`tds_decision_log_records_total\\{result="dropped"\\} ${dropped}\\b`));
    expect(text).toMatch(new RegExp(`tds_decision_log_records_total\\{result="queued"\\} ${queued}\\b`));
  }, 60_000);
});

describe('DECISION_LOG=off', () => {
  let t: TestApp;
  let k: ProjectKeys;
  let treatmentId: string;
  beforeAll(async () => {
    t = await createTestApp({ DECISION_LOG: 'off' });
    k = await createProjectWithKeys(t);
    treatmentId = await catalogue(t, k);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('delivers and holds out as usual but records nothing', async () => {
    const r = await callOk(t, 'GetTreatments', k.delivery, { projectId: k.projectId, userId: 'u1', surfaces: [{ surface: 'home' }] });
    expect(r.userTreatments).toHaveLength(1);
    await new Promise((res) => setTimeout(res, 300));
    const queue = new Queue(QUEUE.decisions, {
      connection: queueConnection(t.ctx.redis),
      prefix: bullPrefix(t.ctx.config.redisPrefix),
      skipVersionCheck: true,
    });
    try {
      expect(await queue.count()).toBe(0);
    } finally {
      await queue.close();
    }
    expect(t.ctx.metrics.decisionLog).toEqual({ queued: 0, dropped: 0 });
  });

  it('ListDecisions and GetTreatmentReport answer 400 FAILED_PRECONDITION naming the setting', async () => {
    for (const [op, body] of [
      ['ListDecisions', { userId: 'u1' }],
      ['GetTreatmentReport', { treatmentId }],
    ] as const) {
      const r = await call(t, op, k.management, { projectId: k.projectId, ...body });
      expect(r.status).toBe(400);
      expect(r.body.error.status).toBe('FAILED_PRECONDITION');
      expect(r.body.error.message).toContain('DECISION_LOG=off');
    }
  });

  it('an interaction must name its user, treatment and surface', async () => {
    const base = {
      projectId: k.projectId,
      treatmentTrackingId: `${treatmentId}_resp1`,
      interactionType: 'VIEWED',
      interactionTimeMicros: String(Date.now() * 1000),
    };
    const missing = await call(t, 'LogTreatmentInteraction', k.delivery, { ...base, userId: 'u1' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['surface', 'treatmentId']);
    const full = await call(t, 'LogTreatmentInteraction', k.delivery, { ...base, userId: 'u1', treatmentId, surface: 'home' });
    expect(full.status).toBe(200);
  });
});
