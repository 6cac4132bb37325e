/**
 * CPU per request of the API process,
 * (`npx tsx bench/request-cost.ts [seconds] [--rate N] [--repeat N] [--cpu-prof DIR]`), closed loop at saturation (or, with
 * `--rate`, an open loop of N requests/s over 100 connections): µs of CPU the API process, the
 * background process and Redis spend per GetTreatments, and the same for the bare baseline route.
 * At a rate below saturation most requests have an event-loop turn of their own, so the CPU per
 * request is higher than in the closed loop: that is the cost an open loop's latency depends on. CPU per
 * request is what bounds throughput on a CPU-bound single thread, and unlike requests/s it barely
 * moves when other work shares the machine, so it guides optimisation between full benchmark runs.
 * `--repeat N` measures the same service N times in a row, then the baseline N times, which shows
 * how far one process's own figures move from one measurement to the next; `--env NAME=VALUE` (repeatable) sets the service's
 * environment (e.g. `--env DECISION_LOG=off`).
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { startBaselineServer } from './lib/baseline-server.js';
import { runLoad } from './lib/load-runner.js';
import { runOpenLoop } from './lib/open-loop.js';
import { cpuTimes, threadCpuOf, threadCpuPer } from './lib/proc-stat.js';
import { ScenarioRun } from './lib/scenario-run.js';
import { DELIVERY_SIZES, prepareDelivery } from './scenarios/delivery.js';

const args = process.argv.slice(2);
const profAt = args.indexOf('--cpu-prof');
const cpuProfDir = profAt >= 0 ? resolve(args.splice(profAt, 2)[1] ?? 'bench-profiles') : undefined;
const rateAt = args.indexOf('--rate');
const rate = rateAt >= 0 ? Number(args.splice(rateAt, 2)[1]) : undefined;
if (rate !== undefined && !(rate > 0)) throw new Error('--rate takes a positive number of requests/s');
const repeatAt = args.indexOf('--repeat');
const repeats = repeatAt >= 0 ? Number(args.splice(repeatAt, 2)[1]) : 1;
if (!Number.isInteger(repeats) || repeats < 1) throw new Error('--repeat takes a whole number of runs, at least 1');
/** `--env K=V` (repeatable): the service's environment, e.g. `--env DECISION_LOG=off`. */
const env: Record<string, string> = {};
for (let at = args.indexOf('--env'); at >= 0; at = args.indexOf('--env')) {
  const [k, ...v] = (args.splice(at, 2)[1] ?? '').split('=');
  if (!k || v.length === 0) throw new Error('--env takes NAME=VALUE');
  env[k] = v.join('=');
}
const seconds = Number(args[0] ?? 8);
function cpuOf(pid: number): number {
  const t = cpuTimes(pid);
  return t.user + t.sys;
}
/** An open loop's answers slower than this are grouped into stalls. */
const SLOW_MS = 5;

/**
 * The slow answers of an open loop grouped by when they were due (within 50 ms of the group's
 * first): a stall of the server (a GC pause, the process descheduled) delays every request due
 * during it, so it shows as one group of many; scattered single ones are queueing.
 */
function stallsOf(slow: { dueMs: number; waitMs: number }[]): string {
  slow.sort((a, b) => a.dueMs - b.dueMs);
  const groups: { at: number; n: number; max: number }[] = [];
  for (const a of slow) {
    const g = groups.at(-1);
    if (g && a.dueMs - g.at < 50) {
      g.n++;
      g.max = Math.max(g.max, a.waitMs);
    } else groups.push({ at: a.dueMs, n: 1, max: a.waitMs });
  }
  const largest = [...groups].sort((a, b) => b.n - a.n).slice(0, 12);
  largest.sort((a, b) => a.at - b.at);
  const shown = largest.map((g) => `at ${(g.at / 1000).toFixed(2)} s ${g.n} (up to ${g.max.toFixed(0)} ms)`).join(', ');
  return `${slow.length} answers over ${SLOW_MS} ms, in ${groups.length} groups of answers due within 50 ms; the largest: ${shown}`;
}

async function redisCpu(run: ScenarioRun): Promise<number> {
  const info = await run.redis.info('cpu');
  const get = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return get('used_cpu_sys') + get('used_cpu_user');
}

async function main(): Promise<void> {
  const run = ScenarioRun.openTool('cost', { cpuProfDir });
  const progress = run.ctx.progress;
  const p = { ...DELIVERY_SIZES.full, users: 10_000 };
  try {
    progress(
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    const svc = await run.startService({ env });
    const { keys, body } = await prepareDelivery(run, svc, p);
    const measure = async (label: string, baseUrl: string, pids: Record<string, number>, headers: Record<string, string>) => {
      const o = { baseUrl, path: '/v1/GetTreatments', durationSec: seconds, connections: 50, headers, body };
      // through the run, so its progress watchdog names this step and not the catalogue's
      run.progress(`${label}: 2 s warm-up + ${seconds} s ${rate === undefined ? 'closed loop' : `at ${rate} req/s`}`);
      await runLoad({ ...o, durationSec: 2 });
      const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuOf(pid)]));
      const threadsBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, threadCpuOf(pid, { splitMainKernel: true })]));
      const r0 = await redisCpu(run);
      const slow: { dueMs: number; waitMs: number }[] = [];
      const r =
        rate === undefined
          ? await runLoad(o)
          : await runOpenLoop({ ...o, rate, connections: 100, preconnect: true, onAnswer: (a) => void (a.waitMs > SLOW_MS && slow.push(a)) });
      if (rate !== undefined) progress(`${label}: ${stallsOf(slow)}`);
      const r1 = await redisCpu(run);
      const n = r.ok + r.non2xx;
      const parts = Object.entries(pids).map(([k, pid]) => `${k} ${(((cpuOf(pid) - before[k]) * 1e6) / n).toFixed(0)} µs`);
      progress(
        `${label}: ${n} requests, ${r.rps.toFixed(0)} req/s (${r.ok} ok, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms); CPU per request: ${parts.join(', ')}, redis ${(((r1 - r0) * 1e6) / n).toFixed(0)} µs`,
      );
      for (const [k, pid] of Object.entries(pids)) {
        const spent = threadCpuPer(threadsBefore[k], threadCpuOf(pid, { splitMainKernel: true }), n, 0.5);
        progress(`  ${k} by thread (µs per request): ${spent.map(([t, us]) => `${t} ${us.toFixed(1)}`).join(', ')}`);
      }
    };
    const [api] = svc.sampler.pids('api');
    const [bg] = svc.sampler.pids('background');
    for (let i = 1; i <= repeats; i++)
      await measure(repeats === 1 ? 'service' : `service (${i} of ${repeats})`, svc.baseUrl, { api, background: bg }, { 'x-api-key': keys.delivery });
    await run.stopService(svc);
    // the peak RSS of each process (and its RSS when ready) and, with --cpu-prof, each profile's summary
    for (const note of run.notes) progress(note);
    const base = await startBaselineServer('redis-hash', run.ctx.redisUrl, run.prefix);
    for (let i = 1; i <= repeats; i++)
      await measure(repeats === 1 ? 'baseline' : `baseline (${i} of ${repeats})`, base.baseUrl, { baseline: base.sampler.pid }, {});
    await base.stop();
    progress(
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await run.close();
  }
}
void main();
