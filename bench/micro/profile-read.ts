/**
 * What reading a profile costs the process that reads it, and Redis: the delivery scenario's
 * profiles seeded into Redis, then read `reads` times, 50 at a time, as GetTreatments reads them
 * (ProfileStore.get: HGETALL, which ioredis decodes as two RESP strings a field, then parseProfile)
 * and by a script that answers the hash as one JSON text (`cjson.encode` of HGETALL's reply, one
 * JSON.parse in the client), alternating three times. Prints µs of this process's CPU and of
 * Redis's per read: the script saved the client 6-8 µs a read and cost Redis 4.3-5 µs more (about
 * three times HGETALL's), so a GetTreatments would move work from its API process to the one Redis
 * every API process shares; not taken (docs/benchmarks.md, stop 51). Needs Redis (REDIS_URL,
 * default redis://127.0.0.1:6379); leaves nothing behind.
 *   npx tsx bench/micro/profile-read.ts [reads]
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { utcDay } from '../../shared/aggregation/index.js';
import { createRedis, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { parseProfile } from '../../shared/profiles/profile-layout.js';
import { RedisScript } from '../../shared/platform/redis/redis-script.js';
import { seedProfiles } from '../lib/bench-redis.js';
import { profileOf } from '../lib/delivery-catalogue.js';
import { userIdOf } from '../lib/event-generator.js';
import { MICRO_WARMUP_CALLS, timeAsync } from './micro-lib.js';

const reads = Number(process.argv[2] ?? 100_000);
const USERS = 1000;
const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer', 'micro-profile-read');
const keys = redisKeys(`micro-${randomUUID().slice(0, 8)}`);
const projectId = 'micro';
const catalogue = { ageId: 'f-age', countryId: 'f-country', premiumId: 'f-premium', purchasesId: 'f-purchases' };
const store = new ProfileStore(redis, keys);
const AS_JSON = new RedisScript('read-profile-json', `return cjson.encode(redis.call('HGETALL', KEYS[1]))`, 1);

/** The script's read: HGETALL's flat reply as a JSON array ({} for a missing key), back into the hash's object. */
async function readAsJson(key: string): Promise<Record<string, string>> {
  const flat: unknown = JSON.parse((await AS_JSON.run(redis, [key], [])) as string);
  const raw: Record<string, string> = {};
  if (Array.isArray(flat)) for (let i = 0; i < flat.length; i += 2) raw[flat[i] as string] = flat[i + 1] as string;
  return raw;
}

/** Redis's own CPU (user + system) in µs, from INFO. */
async function redisCpuUs(): Promise<number> {
  const info = await redis.info('cpu');
  return ['used_cpu_user', 'used_cpu_sys'].reduce((sum, k) => sum + Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0), 0) * 1e6;
}

async function measure(label: string, read: (i: number) => Promise<unknown>): Promise<void> {
  const before = await redisCpuUs();
  const client = await timeAsync(label, reads, 50, read);
  // Redis's CPU covers timeAsync's warm-up calls too (it times only the others)
  const server = ((await redisCpuUs()) - before) / (reads + Math.min(reads, MICRO_WARMUP_CALLS));
  console.log(`${''.padEnd(40)} ${server.toFixed(2).padStart(8)} µs in Redis (client + Redis ${(client + server).toFixed(2)})`);
}

async function main(): Promise<void> {
  console.log(`load average (1 min) ${loadavg()[0].toFixed(2)} at the start`);
  await waitForRedis(redis, 10_000);
  await seedProfiles(
    redis,
    keys,
    projectId,
    USERS,
    userIdOf,
    (i) => profileOf(i, catalogue, utcDay(Date.now())),
    () => undefined,
  );
  try {
    for (let round = 0; round < 3; round++) {
      await measure('ProfileStore.get (HGETALL, parseProfile)', (i) => store.get(projectId, userIdOf(i % USERS)));
      await measure('script: one JSON text, parseProfile', async (i) => parseProfile(await readAsJson(keys.profile(projectId, userIdOf(i % USERS)))));
    }
  } finally {
    const p = redis.pipeline();
    for (let i = 0; i < USERS; i++) p.del(keys.profile(projectId, userIdOf(i)));
    await p.exec();
    redis.disconnect();
  }
}
void main();
