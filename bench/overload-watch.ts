/**
 * Diagnosis of stalls under overload (`npx tsx bench/overload-watch.ts [rounds]`, after `npm run
 * build` with BENCH_SERVICE=dist): rounds of a closed loop (the capacity), an open loop at half of
 * it and an overload at twice it over 1,200 connections, as the delivery scenario runs them, while
 * the API process's main thread (state, user and kernel time, wait channel), the background
 * process and Redis are sampled every 5 ms. When answers wait over 300 ms, the samples of that
 * window are printed per 100 ms: a main thread running flat out points inside the process, one
 * asleep points at what it waits on.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
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
  /** Packets the kernel's network receive processing handled so far, all CPUs (softnet_stat). */
  netProcessed: number;
  /** Times that processing stopped with work left for lack of budget (softnet_stat's time_squeeze), all CPUs. */
  netSqueezed: number;
  /** CPU ticks of the kernel's ksoftirqd threads, where deferred network processing runs. */
  ksoftirqd: number;
}

/** softnet_stat's processed and time_squeeze columns, summed over CPUs. */
function softnet(): { processed: number; squeezed: number } {
  let processed = 0;
  let squeezed = 0;
  for (const line of readFileSync('/proc/net/softnet_stat', 'utf8').trim().split('\n')) {
    const cols = line.trim().split(/\s+/);
    processed += parseInt(cols[0], 16);
    squeezed += parseInt(cols[2], 16);
  }
  return { processed, squeezed };
}

/** The pids of the kernel's ksoftirqd threads. */
function ksoftirqdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('ksoftirqd/')) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
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
  let bucket:
    | {
        at: number;
        user: number;
        sys: number;
        background: number;
        redis: number;
        net: number;
        squeezed: number;
        ksoftirqd: number;
        states: Map<string, number>;
      }
    | undefined;
  const flush = () => {
    if (bucket)
      out.push(
        `${(bucket.at / 1000).toFixed(1)} s: API main thread user ${bucket.user} sys ${bucket.sys} ticks (${[...bucket.states].map(([s, n]) => `${s}×${n}`).join(' ')}), background ${bucket.background}, Redis ${bucket.redis}; ` +
          `packets received ${bucket.net}, squeezed ${bucket.squeezed}, ksoftirqd ${bucket.ksoftirqd} ticks`,
      );
  };
  for (const s of samples) {
    if (s.t >= from && s.t <= to && prev) {
      const at = Math.floor(s.t / 100) * 100;
      if (bucket?.at !== at) {
        flush();
        bucket = { at, user: 0, sys: 0, background: 0, redis: 0, net: 0, squeezed: 0, ksoftirqd: 0, states: new Map() };
      }
      bucket.user += s.user - prev.user;
      bucket.sys += s.sys - prev.sys;
      bucket.background += s.background - prev.background;
      bucket.redis += s.redis - prev.redis;
      bucket.net += s.netProcessed - prev.netProcessed;
      bucket.squeezed += s.netSqueezed - prev.netSqueezed;
      bucket.ksoftirqd += s.ksoftirqd - prev.ksoftirqd;
      const key = s.wchan === '0' ? s.state : `${s.state}:${s.wchan}`;
      bucket.states.set(key, (bucket.states.get(key) ?? 0) + 1);
    }
    prev = s;
  }
  flush();
  return out;
}

/** One `ss` snapshot: the connections to the API's port with bytes waiting to be read, by end. */
interface QueueSnapshot {
  t: number;
  /** Connections whose API end holds bytes of a request not yet read by the API process. */
  server: number;
  /** Connections whose generator end holds bytes of an answer not yet read by the generator. */
  client: number;
}

const execFileAsync = promisify(execFile);

/** How many connections of `port` have bytes in their receive queue, at each end. */
async function queued(port: number, t: number): Promise<QueueSnapshot> {
  const { stdout } = await execFileAsync('ss', ['-tnH', 'state', 'established', `( sport = :${port} or dport = :${port} )`], { maxBuffer: 64 << 20 });
  const snap: QueueSnapshot = { t, server: 0, client: 0 };
  for (const line of stdout.split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 4 || cols[0] === '0') continue;
    if (cols[2].endsWith(`:${port}`)) snap.server++;
    else snap.client++;
  }
  return snap;
}

/**
 * Per snapshot: how many connections had unread bytes at each end. A connection listed in two
 * snapshots may hold a different request in each: whether one went unread is told by the slowest
 * requests' marks (a reopened connection) and by the service's own sockets, not by these counts.
 */
function queueLines(snaps: QueueSnapshot[], from: number, to: number): string[] {
  return snaps
    .filter((s) => s.t >= from && s.t <= to)
    .map((s) => `${(s.t / 1000).toFixed(2)} s: connections with unread bytes at the API ${s.server}, at the generator ${s.client}`);
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
    const softirqPids = ksoftirqdPids();
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
          const net = softnet();
          samples.push({
            t: performance.now() - t0,
            state: f[0],
            user: Number(f[11]),
            sys: Number(f[12]),
            wchan: readFileSync(`/proc/${api}/task/${api}/wchan`, 'utf8'),
            background: processTicks(background),
            redis: redisPid > 0 ? processTicks(redisPid) : 0,
            netProcessed: net.processed,
            netSqueezed: net.squeezed,
            ksoftirqd: softirqPids.reduce((sum, pid) => sum + processTicks(pid), 0),
          });
        } catch {
          // a process ended: the round's figures say so
        }
      }, 5);
      const port = Number(new URL(svc.baseUrl).port);
      const snaps: QueueSnapshot[] = [];
      let snapping = true;
      const snapper = (async () => {
        while (snapping) {
          snaps.push(await queued(port, performance.now() - t0));
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
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
      snapping = false;
      await snapper;
      progress(
        `round ${round}: capacity ${closed.rps.toFixed(0)} req/s; overload ${rate} req/s: longest wait ${r.maxWaitMs.toFixed(0)} ms, p99 of the 200s ${r.p99.toFixed(1)} ms, ${waited.length} answers over ${WAIT_MS} ms; ` +
          `sent up to ${r.maxSendLagMs.toFixed(0)} ms late, written up to ${r.maxWriteLagMs.toFixed(0)} ms late (waiting for a free connection); ${r.reconnects} connections opened again (closed by the server); slowest: ${slowestClause(r)}`,
      );
      const first = samples.find((x) => x.t >= startedAt);
      const end = samples[samples.length - 1];
      if (first && end && end.t > first.t) {
        const per = (a: number, b: number) => (((b - a) * 100) / (end.t - first.t)).toFixed(1);
        progress(
          `  the whole overload, per 100 ms: API main thread user ${per(first.user, end.user)} sys ${per(first.sys, end.sys)} ticks, background ${per(first.background, end.background)}, Redis ${per(first.redis, end.redis)}, ` +
            `ksoftirqd ${per(first.ksoftirqd, end.ksoftirqd)} ticks; packets received ${per(first.netProcessed, end.netProcessed)}, squeezed ${per(first.netSqueezed, end.netSqueezed)}`,
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
      for (const line of queueLines(snaps, from, to)) progress(`  ${line}`);
    }
    await run.stopService(svc);
  } finally {
    await run.close();
  }
}
void main();
