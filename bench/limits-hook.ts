/**
 * Per-request cost of the per-key rate limit, in isolation (`npx tsx bench/limits-hook.ts`).
 * Not a scenario of `npm run bench`: it compares, in one process and in alternating rounds,
 *  - the token bucket alone (`RequestLimits.keyRequest` on an admitted key), in ns per call;
 *  - a Fastify route whose synchronous onRequest hook does nothing, calls the token bucket, or
 *    instead uses @fastify/rate-limit (its async hook, local store, keyed by the API key),
 *    through `inject`, in µs of CPU per request (CPU time, not wall time: the machine is shared).
 * The figures to compare with are GetTreatments' ~285 µs of API-thread CPU per call (README).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { RequestLimits } from '../shared/platform/limits/request-limits.js';

const KEY = 'tds_0123456789abcdef_secretsecretsecretsecretsecretsecretsecre';
/** The verified key's record, as the request path holds it (cached: no allocation per call). */
const KEY_RECORD = { keyId: '0123456789abcdef' };

function bucketNs(limits: RequestLimits, n: number): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) if (limits.keyRequest(KEY_RECORD) !== undefined) throw new Error('refused');
  const used = process.cpuUsage(t0);
  return ((used.user + used.system) * 1000) / n;
}

async function app(kind: 'none' | 'bucket' | 'plugin'): Promise<FastifyInstance> {
  const a = Fastify({ logger: false });
  const limits = new RequestLimits({ rateLimitPerKey: 1e9, rateLimitUnauthenticated: 20 });
  if (kind === 'plugin') await a.register(rateLimit, { global: true, max: 2e9, timeWindow: 1000, keyGenerator: (req) => String(req.headers['x-api-key']) });
  a.post(
    '/x',
    {
      onRequest: (req, _reply, done) => {
        if (kind === 'bucket')
          return done(String(req.headers['x-api-key']).slice(4, 20) === KEY_RECORD.keyId ? limits.keyRequest(KEY_RECORD) : new Error('unknown key'));
        done();
      },
    },
    async () => ({}),
  );
  await a.ready();
  return a;
}

async function injectUs(a: FastifyInstance, n: number): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await a.inject({ method: 'POST', url: '/x', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, payload: '{}' });
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / n;
}

async function main(): Promise<void> {
  const limits = new RequestLimits({ rateLimitPerKey: 1e9, rateLimitUnauthenticated: 20 });
  bucketNs(limits, 1e6);
  const ns: number[] = [];
  for (let r = 0; r < 5; r++) ns.push(bucketNs(limits, 2e6));
  const apps = { none: await app('none'), bucket: await app('bucket'), plugin: await app('plugin') };
  const us: Record<string, number[]> = { none: [], bucket: [], plugin: [] };
  for (const a of Object.values(apps)) await injectUs(a, 5000);
  for (let r = 0; r < 7; r++) for (const [k, a] of Object.entries(apps)) us[k].push(await injectUs(a, 20_000));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`token bucket alone: ${median(ns).toFixed(0)} ns per admitted call (median of 5 × 2,000,000)`);
  console.log(
    `route via inject, CPU per request, median of 7 rounds × 20,000: no limit ${median(us.none).toFixed(2)} µs, token bucket ${median(us.bucket).toFixed(2)} µs (+${(median(us.bucket) - median(us.none)).toFixed(2)}), @fastify/rate-limit ${median(us.plugin).toFixed(2)} µs (+${(median(us.plugin) - median(us.none)).toFixed(2)})`,
  );
  for (const a of Object.values(apps)) await a.close();
}

void main();
