// profiles selectTreatments alone: npx tsx --cpu-prof bench/micro/select-prof.ts
const { selectTreatments } = (await import(process.env.SELECT_FROM ?? '../../shared/delivery/index.js')) as typeof import('../../shared/delivery/index.js');
import { parseProfile } from '../../shared/profiles/profile-layout.js';
import { createTestApp, createProjectWithKeys } from '../../test/helpers/context.js';
import { seedDelivery } from './micro-lib.js';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';

const t = await createTestApp();
const k = await createProjectWithKeys(t);
const reqs = await seedDelivery(t, k, 200, 200);
const plan = await t.ctx.delivery.catalogPlans.plan(k.projectId);
const profiles = (await Promise.all(reqs.map((r) => t.ctx.redis.hgetall(t.ctx.keys.profile(k.projectId, r.userId))))).map(parseProfile);
const stats = await t.ctx.delivery.rankingStats.view(k.projectId);
const now = Date.now();
const policy = t.ctx.delivery.rankingPolicy;
const run = (n: number) => {
  for (let i = 0; i < n; i++) selectTreatments(plan, reqs[i % 200], profiles[i % 200], { policy, stats }, now, 'resp-1');
};
run(20000);
const s = new Session();
s.connect();
await s.post('Profiler.enable');
await s.post('Profiler.setSamplingInterval', { interval: 50 });
await s.post('Profiler.start');
const t0 = process.cpuUsage();
run(100000);
const u = process.cpuUsage(t0);
const { profile } = await s.post('Profiler.stop');
writeFileSync('/tmp/select.cpuprofile', JSON.stringify(profile));
console.log(`selectTreatments ${((u.user + u.system) / 100000).toFixed(2)} µs`);
await t.close();
