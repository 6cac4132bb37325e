import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { Queue } from 'bullmq';
import { createRedis, waitForRedis, queueConnection } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { bullPrefix } from '../../shared/platform/queues.js';
import { ProcessSampler } from './process-sampler.js';
import { freePort, spawnTsxChild, waitForHttp, type TsxChild } from './tsx-child.js';

/**
 * The baselines of the HTTP scenarios: the least a Fastify service on the same Redis can do for
 * the same request, in its own process like the service (no validation, no auth, no logic).
 * - `redis-hash`: POST /v1/GetTreatments reads the user's profile hash (one HGETALL) and answers it as JSON.
 * - `bullmq-add`: POST /v1/LogEvents adds the body as one BullMQ job and answers `{}`.
 */
export type BaselineKind = 'redis-hash' | 'bullmq-add';

/** Queue of the `bullmq-add` baseline (nobody consumes it; the scenario deletes its keys). */
export const BASELINE_QUEUE = 'bench-baseline';

async function serve(kind: BaselineKind, port: number, redisUrl: string, prefix: string): Promise<void> {
  // the service's request-path connection profile
  const redis = createRedis(redisUrl, 'producer', 'bench-baseline');
  await waitForRedis(redis, 10_000);
  const keys = redisKeys(prefix);
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  if (kind === 'redis-hash') {
    app.post('/v1/GetTreatments', async (req) => {
      const body = req.body as { projectId: string; userId: string };
      return { responseId: randomUUID(), profile: await redis.hgetall(keys.profile(body.projectId, body.userId)) };
    });
  } else {
    const queue = new Queue(BASELINE_QUEUE, { connection: queueConnection(redis), prefix: bullPrefix(prefix) });
    app.post('/v1/LogEvents', async (req) => {
      await queue.add('events', req.body, { removeOnComplete: true });
      return {};
    });
  }
  app.get('/readyz', async () => ({ status: 'ready' }));
  // the same accept queue as the service's listeners (api/server.ts), so a burst of connections meets the same kernel
  await app.listen({ port, host: '127.0.0.1', backlog: 4096 });
  process.once('SIGTERM', () => {
    void app.close().then(() => {
      redis.disconnect();
      process.exit(0);
    });
  });
}

export interface BaselineProcess {
  baseUrl: string;
  sampler: ProcessSampler;
  readyRssMb: number;
  stop(): Promise<{ peakRssMb: number }>;
}

/** Starts a baseline server in a child process and waits until it answers. */
export async function startBaselineServer(kind: BaselineKind, redisUrl: string, prefix: string): Promise<BaselineProcess> {
  const port = await freePort();
  const child: TsxChild = spawnTsxChild('bench/lib/baseline-server.ts', {
    env: { BASELINE_KIND: kind, BASELINE_PORT: String(port), REDIS_URL: redisUrl, BASELINE_PREFIX: prefix },
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${baseUrl}/readyz`, child, 30_000);
  const sampler = new ProcessSampler(child.pid).start();
  return {
    baseUrl,
    sampler,
    readyRssMb: sampler.rssMb(),
    async stop() {
      sampler.stop();
      await child.stop(10_000);
      return { peakRssMb: sampler.peakRssMb };
    },
  };
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const kind = process.env.BASELINE_KIND as BaselineKind;
  if (kind !== 'redis-hash' && kind !== 'bullmq-add') throw new Error(`BASELINE_KIND must be redis-hash or bullmq-add, got ${kind}`);
  void serve(kind, Number(process.env.BASELINE_PORT), process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', process.env.BASELINE_PREFIX ?? 'bench');
}
