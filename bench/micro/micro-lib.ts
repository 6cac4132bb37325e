/**
 * What the micro-benchmarks share: µs of CPU per call (after a warm-up), and the delivery
 * scenario's catalogue and profiles seeded into a test app through inject.
 */
import { utcDay } from '../../shared/aggregation/index.js';
import { seedProfiles } from '../lib/bench-redis.js';
import { userIdOf } from '../lib/event-generator.js';
import { createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../../test/helpers/context.js';
import { parseProfile } from '../../shared/profiles/profile-layout.js';
import { createCatalogue, DELIVERY_SIZES, getTreatmentsBodies, profileOf } from '../scenarios/delivery.js';

function report(label: string, n: number, u: NodeJS.CpuUsage): number {
  const us = (u.user + u.system) / n;
  console.log(`${label.padEnd(40)} ${us.toFixed(2).padStart(8)} µs`);
  return us;
}

/** Calls made (and not timed) before the timed ones, at most: the JIT's warm-up. */
export const MICRO_WARMUP_CALLS = 2000;

/** µs of CPU per call of `fn`, printed and answered. */
export function timeSync(label: string, n: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, MICRO_WARMUP_CALLS); i++) fn(i);
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  return report(label, n, process.cpuUsage(t0));
}

/** µs of CPU per call of `fn`, `conc` calls at a time, printed and answered. */
export async function timeAsync(label: string, n: number, conc: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const run = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: conc }, async () => {
        while (next < count) await fn(next++);
      }),
    );
  };
  await run(Math.min(n, MICRO_WARMUP_CALLS));
  const t0 = process.cpuUsage();
  await run(n);
  return report(label, n, process.cpuUsage(t0));
}

/** The delivery scenario's catalogue and `users` seeded profiles in the test app; `n` GetTreatments bodies of the project. */
export async function seedDelivery(t: TestApp, k: ProjectKeys, users: number, n: number): Promise<any[]> {
  const p = { ...DELIVERY_SIZES.full, users };
  const svc = {
    call: async (op: string, key: string, body: Record<string, unknown>) => {
      const r = await t.app.inject({ method: 'POST', url: `/v1/${op}`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: body });
      if (r.statusCode !== 200) throw new Error(`${op} ${r.statusCode} ${r.body}`);
      return r.json();
    },
  };
  const c = await createCatalogue(svc as never, { projectId: k.projectId, management: k.management, delivery: k.delivery } as never, p);
  await seedProfiles(
    t.ctx.redis,
    t.ctx.keys,
    k.projectId,
    p.users,
    userIdOf,
    (i) => profileOf(i, c, utcDay(Date.now())),
    () => undefined,
  );
  const bodies = getTreatmentsBodies(p);
  return Array.from({ length: n }, () => JSON.parse(bodies().replace(/"projectId":"[^"]*"/, `"projectId":"${k.projectId}"`)));
}

/**
 * What the selection micro-benchmarks time `selectTreatments` on: a test app with the delivery
 * scenario's catalogue, `n` request bodies and the parsed profiles of their users.
 */
export async function seedSelection(n: number) {
  const t = await createTestApp();
  const k = await createProjectWithKeys(t);
  const reqs = await seedDelivery(t, k, n, n);
  const plan = await t.ctx.delivery.catalogPlans.plan(k.projectId);
  const profiles = (await Promise.all(reqs.map((r) => t.ctx.redis.hgetall(t.ctx.keys.profile(k.projectId, r.userId))))).map(parseProfile);
  return { t, k, reqs, plan, profiles };
}
