// profiles selectTreatments alone: npx tsx --cpu-prof bench/micro/select-prof.ts
const { selectTreatments } = (await import(process.env.SELECT_FROM ?? '../../shared/delivery/index.js')) as typeof import('../../shared/delivery/index.js');
import { seedSelection } from './micro-lib.js';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';

const { t, k, reqs, plan, profiles } = await seedSelection(200);
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
