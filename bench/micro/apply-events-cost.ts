/**
 * The apply-events script's cost in Redis per event (`npx tsx bench/micro/apply-events-cost.ts
 * [JOBS] [EVENTS]`): JOBS jobs of EVENTS events, each with an insertId and one daily-count op,
 * applied to new users through ProfileStore, against the local Redis. Prints the script's
 * microseconds per call and per event from Redis's own command statistics (evalsha), so the
 * figure is Redis's CPU, whatever else the machine does. A second pass applies the same jobs
 * under new job ids: every insertId is found, nothing is applied. `NO_MARKERS=1`: events without
 * an insertId (the script's cost apart from the markers).
 */
import type { Redis } from 'ioredis';
import { benchPrefix, connectRedis, deletePrefix } from '../lib/bench-redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import type { ProfileEvent } from '../../shared/profiles/profile-ops.js';

async function evalshaMicros(redis: Redis): Promise<{ calls: number; usec: number }> {
  const info = await redis.info('commandstats');
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  return m ? { calls: Number(m[1]), usec: Number(m[2]) } : { calls: 0, usec: 0 };
}

async function main(): Promise<void> {
  const jobs = Number(process.argv[2] ?? 2000);
  const perJob = Number(process.argv[3] ?? 100);
  const redis = connectRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = benchPrefix('apply-events');
  const store = new ProfileStore(redis, redisKeys(prefix));
  const day = new Date().toISOString().slice(0, 10);
  const eventsOf = (j: number): ProfileEvent[] =>
    Array.from({ length: perJob }, (_, i) => ({
      ...(process.env.NO_MARKERS ? {} : { dedupId: `i:${prefix}-${j}-${i}` }),
      ts: Date.now(),
      ops: [['inc', `dc:f1:${day}`, 1]],
    }));
  try {
    for (const pass of ['new', 'duplicate'] as const) {
      const before = await evalshaMicros(redis);
      let applied = 0;
      for (let j = 0; j < jobs; j += 50) {
        const batch = Array.from({ length: Math.min(50, jobs - j) }, (_, k) => j + k);
        const r = await Promise.all(batch.map((n) => store.applyEvents('p1', `u-${n}`, `${pass}-${n}`, eventsOf(n))));
        applied += r.reduce((a, b) => a + b, 0);
      }
      const after = await evalshaMicros(redis);
      const usec = after.usec - before.usec;
      const calls = after.calls - before.calls;
      process.stdout.write(
        `${pass}: ${jobs} jobs of ${perJob} events, ${applied} applied; evalsha ${(usec / calls).toFixed(1)} µs a call, ${(usec / (jobs * perJob)).toFixed(3)} µs an event\n`,
      );
    }
  } finally {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
