/**
 * CPU per LogEvents request through Fastify's inject (`npx tsx bench/micro/logevents-micro.ts`),
 * beside a bare route that adds the body as a BullMQ job, in one process: a guide between full
 * benchmark runs (inject's own cost is in both).
 */
import Fastify from 'fastify';
import { Queue } from 'bullmq';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { createTestApp, createProjectWithKeys } from '../../test/helpers/context.js';
import { bullPrefix } from '../../shared/platform/queues.js';
import { logEventsBodies } from '../scenarios/log-events.js';
import { timeAsync } from './micro-lib.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';

const t = await createTestApp();
const k = await createProjectWithKeys(t);
const bodies = logEventsBodies({ users: 1000, eventsPerRequest: 10 });
const payloads = Array.from({ length: 2000 }, () => bodies().replace(/"projectId":"[^"]*"/, `"projectId":"${k.projectId}"`));
const N = Number(process.env.MICRO_N ?? 10000);
const session = new Session();
if (process.env.MICRO_PROF) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const svc = await timeAsync('inject LogEvents (10 events)', N, 20, (i) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/LogEvents',
    headers: { 'x-api-key': k.logEvents, 'content-type': 'application/json' },
    payload: payloads[i % 2000],
  }),
);
if (process.env.MICRO_PROF) writeFileSync(process.env.MICRO_PROF, JSON.stringify((await session.post('Profiler.stop')).profile));
const bare = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
const queue = new Queue('bench-micro', { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(t.ctx.config.redisPrefix) });
bare.post('/v1/LogEvents', async (req) => {
  await queue.add('events', req.body, { removeOnComplete: true });
  return {};
});
await bare.ready();
const b = await timeAsync('inject bare route (BullMQ add)', N, 20, (i) =>
  bare.inject({ method: 'POST', url: '/v1/LogEvents', headers: { 'content-type': 'application/json' }, payload: payloads[i % 2000] }),
);
console.log(`ratio ${(b / svc).toFixed(2)}`);
await queue.obliterate({ force: true });
await queue.close();
await t.close();
