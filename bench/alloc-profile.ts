/**
 * Where a GetTreatments allocates (`npx tsx bench/alloc-profile.ts [requests]`): the API in this
 * process on a real listener, the delivery scenario's catalogue and profiles, then V8's sampling
 * heap profiler over `requests` requests, counting the objects the young and old collections
 * freed too (the garbage, which is what makes collections frequent). Prints the bytes allocated
 * per request by function (self) and by the repository's own frame nearest to the allocation.
 * The load generator (fetch) shares the process; its frames are shown apart.
 */
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../shared/platform/config.js';
import { createLogger } from '../shared/platform/logger.js';
import { waitForRedis } from '../shared/platform/redis/redis.js';
import { redisKeys } from '../shared/platform/redis/redis-keys.js';
import { openApiServices } from '../api/compose-api.js';
import { buildApp } from '../api/app.js';
import { utcDay } from '../shared/aggregation/index.js';
import { deletePrefix, seedProfiles } from './lib/bench-redis.js';
import { createCatalogue, profileOf } from './lib/delivery-catalogue.js';
import { userIdOf } from './lib/event-generator.js';
import { DELIVERY_SIZES, getTreatmentsBodies } from './scenarios/delivery.js';
import { PROJECT_ID } from './scenarios/log-events.js';
import type { ServiceProcess } from './lib/service-process.js';

// --promoted: only what outlived the young generation (objects freed by the old generation's
// collections, and what is still alive): what makes the old generation grow and its collections come
const promotedOnly = process.argv.includes('--promoted');
const requests = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 5000);
const ADMIN = randomBytes(12).toString('hex');
const prefix = `bench-alloc-${randomBytes(4).toString('hex')}`;
const config = loadConfig({
  REDIS_PREFIX: prefix,
  ADMIN_TOKEN: ADMIN,
  LOG_LEVEL: 'silent',
  AUTO_START_REDIS: 'false',
  OPS_PORT: '0',
  RATE_LIMIT_PER_KEY: '10000000',
  RATE_LIMIT_UNAUTHENTICATED: '1000000',
  OVERLOAD_MAX_LAG_MS: '0',
  OVERLOAD_MAX_IN_FLIGHT: '0',
  ...(process.env.DECISION_LOG ? { DECISION_LOG: process.env.DECISION_LOG } : {}),
});
const api = openApiServices(config, createLogger('silent'));
const ctx = api.services;
await waitForRedis(ctx.redis, 5000);
ctx.lifecycle.ready = true;
const app = await buildApp(ctx, { listener: 'base' });
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

async function post<T>(path: string, body: unknown, headers: Record<string, string>): Promise<T> {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path} ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}
const svc = {
  admin: (op: string, body: unknown) => post(`/admin/v1/${op}`, body, { authorization: `Bearer ${ADMIN}` }),
  call: (op: string, key: string, body: unknown) => post(`/v1/${op}`, body, { 'x-api-key': key }),
} as unknown as ServiceProcess;
await svc.admin('CreateProject', { projectId: PROJECT_ID });
const key = async (permissions: string[]) => (await svc.admin<{ key: string }>('CreateApiKey', { projectId: PROJECT_ID, permissions })).key;
const keys = {
  projectId: PROJECT_ID,
  management: await key(['TREATMENT_MANAGEMENT']),
  delivery: await key(['DELIVERY']),
  logEvents: await key(['LOG_EVENTS']),
};
const p = { ...DELIVERY_SIZES.full, users: 5000 };
const catalogue = await createCatalogue(svc, keys, p);
await seedProfiles(
  ctx.redis,
  redisKeys(prefix),
  PROJECT_ID,
  p.users,
  userIdOf,
  (i) => profileOf(i, catalogue, utcDay(Date.now())),
  () => undefined,
);
const body = getTreatmentsBodies(p);

let responseBytes = 0;
async function fire(n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next++ < n) {
      const res = await fetch(`${base}/v1/GetTreatments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': keys.delivery },
        body: body(),
      });
      responseBytes += (await res.text()).length;
      if (res.status !== 200) throw new Error(`GetTreatments ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
}
process.stderr.write(`warming up (${requests} requests)\n`);
await fire(requests);
responseBytes = 0;

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: !promotedOnly,
} as never);
process.stderr.write(`profiling ${requests} requests\n`);
await fire(requests);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: Node } };
session.disconnect();

const ours = (url: string) => url.includes('/work/') && !url.includes('node_modules') && !url.includes('/bench/');
const name = (f: Node['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules\/[^/]+|[^/]+\/[^/]+)\//, '$1/')}:${f.lineNumber + 1}`;
const self = new Map<string, number>();
const nearest = new Map<string, number>();
let total = 0;
let client = 0;
const walk = (n: Node, stack: Node['callFrame'][]) => {
  const s = [...stack, n.callFrame];
  if (n.selfSize > 0) {
    total += n.selfSize;
    if (s.some((f) => /undici|\/bench\//.test(f.url))) client += n.selfSize;
    else {
      self.set(name(n.callFrame), (self.get(name(n.callFrame)) ?? 0) + n.selfSize);
      const own = [...s].reverse().find((f) => ours(f.url));
      const k = own ? name(own) : '(no frame of ours)';
      nearest.set(k, (nearest.get(k) ?? 0) + n.selfSize);
    }
  }
  for (const c of n.children) walk(c, s);
};
walk(profile.head, []);
const per = (b: number) => `${(b / requests / 1024).toFixed(2)} KB`;
console.log(
  `${promotedOnly ? 'promoted' : 'allocated'} per request: ${per(total)} in all, ${per(client)} by the load generator; response ${(responseBytes / requests).toFixed(0)} chars`,
);
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `  ${per(v).padStart(9)}  ${k}`)
    .join('\n');
console.log(`by function (self):\n${top(self, 40)}`);
console.log(`by the nearest frame of the service's code:\n${top(nearest, 40)}`);
await app.close();
await deletePrefix(ctx.redis, prefix);
await api.close();
process.exit(0);
