/**
 * Diagnosis of stalls under overload (`npx tsx bench/overload-watch.ts [rounds]`, after `npm run
 * build` with BENCH_SERVICE=dist): rounds of a closed loop (the capacity), an open loop at half of
 * it and an overload at twice it over 1,200 connections, as the delivery scenario runs them, while
 * the API process's main thread (state, user and kernel time, wait channel), the background
 * process and Redis are sampled every 5 ms. When answers wait over 300 ms, the samples of that
 * window are printed per 100 ms: a main thread running flat out points inside the process, one
 * asleep points at what it waits on.
 */
import { readFileSync } from 'node:fs';
import { runLoad } from './lib/load-runner.js';
import { runOpenLoop } from './lib/open-loop.js';
import { slowestClause } from './lib/overload.js';
import { CLOCK_TICKS, cpuTimes, statFields } from './lib/proc-stat.js';
import { ScenarioRun } from './lib/scenario-run.js';
import { DELIVERY_SIZES, prepareDelivery } from './scenarios/delivery.js';

/** A 5 ms sample; CPU in clock ticks (1/100 s) since the process started. */
interface Sample {
  t: number;
  state: string;
  user: number;
  sys: number;
  wchan: string;
  background: number;
  redis: number;
}

const WAIT_MS = 300;

/** CPU ticks of a process, all its threads (one read of its own stat file). */
function processTicks(pid: number): number {
  const t = cpuTimes(pid);
  return Math.round((t.user + t.sys) * CLOCK_TICKS);
}

/** The samples of [from, to] per 100 ms: ticks used, and the states and wait channels seen. */
function perTenth(samples: Sample[], from: number, to: number): string[] {
  const out: string[] = [];
  let prev: Sample | undefined;
  let bucket: { at: number; user: number; sys: number; background: number; redis: number; states: Map<string, number> } | undefined;
  const flush = () => {
    if (bucket)
      out.push(
        `${(bucket.at / 1000).toFixed(1)} s: API main thread user ${bucket.user} sys ${bucket.sys} ticks (${[...bucket.states].map(([s, n]) => `${s}×${n}`).join(' ')}), background ${bucket.background}, Redis ${bucket.redis}`,
      );
  };
  for (const s of samples) {
    if (s.t >= from && s.t <= to && prev) {
      const at = Math.floor(s.t / 100) * 100;
      if (bucket?.at !== at) {
        flush();
        bucket = { at, user: 0, sys: 0, background: 0, redis: 0, states: new Map() };
      }
      bucket.user += s.user - prev.user;
      bucket.sys += s.sys - prev.sys;
      bucket.background += s.background - prev.background;
      bucket.redis += s.redis - prev.redis;
      const key = s.wchan === '0' ? s.state : `${s.state}:${s.wchan}`;
      bucket.states.set(key, (bucket.states.get(key) ?? 0) + 1);
    }
    prev = s;
  }
  flush();
  return out;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const run = ScenarioRun.openTool('overload-watch');
  const progress = run.ctx.progress;
  const p = { ...DELIVERY_SIZES.full, users: 20_000 };
  try {
    const svc = await run.startService();
    const { keys, body } = await prepareDelivery(run, svc, p);
    const [api] = svc.sampler.pids('api');
    const [background] = svc.sampler.pids('background');
    const redisPid = Number(/^process_id:(\d+)/m.exec(await run.redis.info('server'))?.[1]);
    const target = { baseUrl: svc.baseUrl, path: '/v1/GetTreatments', headers: { 'x-api-key': keys.delivery }, body };
    for (let round = 1; round <= rounds; round++) {
      const closed = await runLoad({ ...target, durationSec: 13, connections: 50 });
      await runOpenLoop({ ...target, rate: Math.round(closed.rps / 2), durationSec: 13, connections: 100, preconnect: true });
      const rate = Math.round(closed.rps * 2);
      const samples: Sample[] = [];
      const t0 = performance.now();
      const timer = setInterval(() => {
        try {
          const f = statFields(`/proc/${api}/task/${api}/stat`);
          samples.push({
            t: performance.now() - t0,
            state: f[0],
            user: Number(f[11]),
            sys: Number(f[12]),
            wchan: readFileSync(`/proc/${api}/task/${api}/wchan`, 'utf8'),
            background: processTicks(background),
            redis: redisPid > 0 ? processTicks(redisPid) : 0,
          });
        } catch {
          // a process ended: the round's figures say so
        }
      }, 5);
      const waited: { dueMs: number; waitMs: number }[] = [];
      let startedAt = 0;
      const r = await runOpenLoop({
        ...target,
        rate,
        durationSec: 10,
        connections: 1200,
        preconnect: true,
        onStart: (s) => (startedAt = s - t0),
        onAnswer: (a) => void (a.waitMs > WAIT_MS && waited.push(a)),
      });
      clearInterval(timer);
      progress(
        `round ${round}: capacity ${closed.rps.toFixed(0)} req/s; overload ${rate} req/s: longest wait ${r.maxWaitMs.toFixed(0)} ms, p99 of the 200s ${r.p99.toFixed(1)} ms, ${waited.length} answers over ${WAIT_MS} ms; ` +
          `sent up to ${r.maxSendLagMs.toFixed(0)} ms late, written up to ${r.maxWriteLagMs.toFixed(0)} ms late (waiting for a free connection); slowest: ${slowestClause(r)}`,
      );
      const first = samples.find((x) => x.t >= startedAt);
      const end = samples[samples.length - 1];
      if (first && end && end.t > first.t) {
        const per = (a: number, b: number) => (((b - a) * 100) / (end.t - first.t)).toFixed(1);
        progress(
          `  the whole overload, per 100 ms: API main thread user ${per(first.user, end.user)} sys ${per(first.sys, end.sys)} ticks, background ${per(first.background, end.background)}, Redis ${per(first.redis, end.redis)}`,
        );
      }
      if (waited.length === 0) continue;
      waited.sort((a, b) => a.dueMs - b.dueMs);
      const last = waited[waited.length - 1];
      const from = startedAt + waited[0].dueMs - 200;
      const to = startedAt + last.dueMs + last.waitMs + 200;
      progress(
        `  answers over ${WAIT_MS} ms were due from ${((from + 200) / 1000).toFixed(2)} s (the overload started at ${(startedAt / 1000).toFixed(2)} s):`,
      );
      for (const line of perTenth(samples, from, to)) progress(`  ${line}`);
    }
    await run.stopService(svc);
  } finally {
    await run.close();
  }
}
void main();
