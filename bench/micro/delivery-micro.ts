/**
 * Microbenchmark of GetTreatments' pieces in one process (`npx tsx bench/micro/delivery-micro.ts`):
 * the bench's catalogue (50 treatments, 3 rules each) and profiles, then µs of CPU per call of each
 * stage, and whole requests through Fastify's inject.
 */
import Fastify from 'fastify';
import { prepareRequest, requestNeedsProfile, selectTreatments } from '../../shared/delivery/index.js';
import { parseProfile } from '../../shared/profiles/profile-layout.js';
import { bodyShapeError, jsonTextShapeError } from '../../shared/platform/http/body-shape.js';
import { camelizeKeys, schemaFieldNames } from '../../shared/platform/http/camelize.js';
import { v1Operations } from '../../api/v1.routes.js';
import { adminOperations } from '../../api/admin.routes.js';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { createTestApp, createProjectWithKeys } from '../../test/helpers/context.js';
import { seedDelivery, timeAsync, timeSync } from './micro-lib.js';

async function main(): Promise<void> {
  const t = await createTestApp();
  const k = await createProjectWithKeys(t);
  const reqs = await seedDelivery(t, k, 2000, 1000);
  const plan = await t.ctx.delivery.catalogPlans.plan(k.projectId);
  const raws = await Promise.all(reqs.slice(0, 200).map((r) => t.ctx.redis.hgetall(t.ctx.keys.profile(k.projectId, r.userId))));
  const profiles = raws.map(parseProfile);
  const now = Date.now();
  const N = 20000;
  timeSync('parseProfile', N, (i) => parseProfile(raws[i % 200]));
  timeSync('prepareRequest', N, (i) => prepareRequest(plan, reqs[i % 1000]));
  timeSync('requestNeedsProfile', N, (i) => requestNeedsProfile(plan, prepareRequest(plan, reqs[i % 1000]), now));
  const stats = await t.ctx.delivery.rankingStats.view(k.projectId);
  timeSync('selectTreatments', N, (i) =>
    selectTreatments(plan, reqs[i % 200], profiles[i % 200], { policy: t.ctx.delivery.rankingPolicy, stats }, now, 'resp-1'),
  );
  const payloads = reqs.map((r) => JSON.stringify(r));
  const known = schemaFieldNames([...v1Operations.map((op) => op.body), ...adminOperations.map((op) => op.body)]);
  timeSync('jsonTextShapeError', N, (i) => jsonTextShapeError(payloads[i % 1000]));
  timeSync('JSON.parse', N, (i) => JSON.parse(payloads[i % 1000]));
  timeSync('bodyShapeError', N, (i) => bodyShapeError(reqs[i % 1000]));
  timeSync('camelizeKeys', N, (i) => camelizeKeys(reqs[i % 1000], known));
  timeSync('randomUUID', N, () => randomUUID());
  const lg = pino({ level: 'info' }, pino.destination('/dev/null'));
  timeSync('pino child', N, (i) => lg.child({ reqId: String(i) }));
  timeSync('metrics.observeRequest', N, () => t.ctx.metrics.observeRequest('/v1/GetTreatments', 200, 0.001));
  const resp = selectTreatments(plan, reqs[0], profiles[0], { policy: t.ctx.delivery.rankingPolicy, stats }, now, 'resp-1').response;
  timeSync('JSON.stringify(response)', N, () => JSON.stringify(resp));
  const rec = {
    projectId: k.projectId,
    userId: 'u',
    responseId: 'r',
    decideTimeMs: now,
    decisions: [{ treatmentId: '1', versionNumber: 1, surface: 's', rank: 1, outcome: 'RETURNED' as const }],
  };
  timeSync('decisionLog.record', N, () => t.ctx.impact.decisionLog.record(rec));
  const session = new Session();
  if (process.env.MICRO_PROF) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  await timeAsync('inject GetTreatments (whole request)', Number(process.env.MICRO_INJECT ?? 5000), 20, (i) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/GetTreatments',
      headers: { 'x-api-key': k.delivery, 'content-type': 'application/json' },
      payload: payloads[i % 1000],
    }),
  );
  if (process.env.MICRO_PROF) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(process.env.MICRO_PROF, JSON.stringify(profile));
  }
  const bare = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  bare.post('/v1/GetTreatments', async (req) => {
    const body = req.body as { projectId: string; userId: string };
    return { responseId: 'r', profile: await t.ctx.redis.hgetall(t.ctx.keys.profile(body.projectId, body.userId)) };
  });
  await bare.ready();
  await timeAsync('inject bare route (HGETALL + JSON)', Number(process.env.MICRO_INJECT ?? 5000), 20, (i) =>
    bare.inject({ method: 'POST', url: '/v1/GetTreatments', headers: { 'content-type': 'application/json' }, payload: payloads[i % 1000] }),
  );
  await timeAsync('hgetall', 5000, 20, (i) => t.ctx.redis.hgetall(t.ctx.keys.profile(k.projectId, reqs[i % 1000].userId)));
  await t.close();
}
void main();
