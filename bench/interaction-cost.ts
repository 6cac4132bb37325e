/**
 * CPU per LogTreatmentInteraction (`npx tsx bench/interaction-cost.ts [rate] [seconds]
 * [--cpu-prof DIR]`, after `npm run build` with BENCH_SERVICE=dist): the delivery scenario's
 * catalogue, GetTreatments calls for 5,000 real tracking ids, then an open loop of
 * LogTreatmentInteraction at `rate` per second (default 2,000) for `seconds` (default 10), naming
 * user and surface as clients do; µs of CPU per interaction of the API process, of the
 * background process and of Redis, by thread, counted until the interactions queue is empty. No scenario of
 * `npm run bench` sends interactions: this is how their cost is seen.
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { runOpenLoop } from './lib/open-loop.js';
import { threadCpuOf, threadCpuPer } from './lib/proc-stat.js';
import { redisCpuSeconds, ScenarioRun } from './lib/scenario-run.js';
import { DELIVERY_SIZES, prepareDelivery } from './scenarios/delivery.js';

const args = process.argv.slice(2);
const profAt = args.indexOf('--cpu-prof');
const cpuProfDir = profAt >= 0 ? resolve(args.splice(profAt, 2)[1] ?? 'bench-profiles') : undefined;
const rate = Number(args[0] ?? 2000);
const seconds = Number(args[1] ?? 10);
if (!(rate > 0) || !(seconds > 0)) throw new Error('usage: interaction-cost.ts [rate] [seconds] [--cpu-prof DIR]');

interface Tracked {
  userId: string;
  treatmentId: string;
  treatmentTrackingId: string;
  surface: string;
}

async function main(): Promise<void> {
  const run = ScenarioRun.openTool('icost', { cpuProfDir });
  const progress = run.ctx.progress;
  try {
    progress(`load average ${loadavg()[0].toFixed(2)}`);
    const svc = await run.startService({});
    const { keys, body } = await prepareDelivery(run, svc, { ...DELIVERY_SIZES.full, users: 10_000 });
    run.progress('GetTreatments for 5,000 tracking ids');
    const tracked: Tracked[] = [];
    let projectId = '';
    while (tracked.length < 5000) {
      const req = JSON.parse(body()) as { projectId: string; userId: string };
      projectId = req.projectId;
      const res = await svc.call<{ userTreatments?: Omit<Tracked, 'userId'>[] }>('GetTreatments', keys.delivery, req);
      for (const t of res.userTreatments ?? [])
        tracked.push({ userId: req.userId, treatmentId: t.treatmentId, treatmentTrackingId: t.treatmentTrackingId, surface: t.surface });
    }
    const interaction = (i: number) =>
      JSON.stringify({
        projectId,
        ...tracked[i % tracked.length],
        interactionType: i % 3 === 0 ? 'CLICKED' : 'VIEWED',
        interactionTimeMicros: String(Date.now() * 1000),
      });
    const o = {
      baseUrl: svc.baseUrl,
      path: '/v1/LogTreatmentInteraction',
      rate,
      durationSec: seconds,
      connections: 50,
      headers: { 'x-api-key': keys.delivery },
      body: interaction,
      preconnect: true,
    };
    run.progress('2 s warm-up');
    await runOpenLoop({ ...o, durationSec: 2 });
    const queued = async () => {
      const q = `${run.prefix}:bull:interactions`;
      const [wait, active, delayed] = await Promise.all([run.redis.llen(`${q}:wait`), run.redis.llen(`${q}:active`), run.redis.zcard(`${q}:delayed`)]);
      return wait + active + delayed;
    };
    // the queue empty (bounded: an interaction whose decision is not stored yet waits in `delayed`)
    const drain = async (what: string) => {
      for (let waited = 0; (await queued()) > 0; waited += 100) {
        if (waited >= 60_000) throw new Error(`${what}: the interactions queue still holds ${await queued()} jobs after 60 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await drain('after the warm-up');
    const [api] = svc.sampler.pids('api');
    const [background] = svc.sampler.pids('background');
    const before = { api: threadCpuOf(api), background: threadCpuOf(background), redis: await redisCpuSeconds(run.redis) };
    run.progress(`${seconds} s at ${rate} interactions/s`);
    const r = await runOpenLoop({ ...o, onTick: (sec, sent) => run.progress(`${sec.toFixed(0)} s, ${sent.toLocaleString('en')} sent`) });
    await drain('after the run');
    const n = r.ok;
    const per = (pid: number, from: Map<string, number>) => threadCpuPer(from, threadCpuOf(pid), n, 0.5);
    const show = (spent: [string, number][]) =>
      `${spent.reduce((s, [, us]) => s + us, 0).toFixed(0)} µs (${spent.map(([t, us]) => `${t} ${us.toFixed(1)}`).join(', ')})`;
    progress(`${n.toLocaleString('en')} answered 200 (p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms), ${r.non2xx} other answers, ${r.errors} errors`);
    progress(`CPU per interaction: API process ${show(per(api, before.api))}; background process ${show(per(background, before.background))}`);
    const redisUs = (((await redisCpuSeconds(run.redis)) - before.redis) * 1e6) / n;
    progress(`Redis (its INFO's CPU, shared with anything else using it): ${redisUs.toFixed(0)} µs`);
    await run.stopService(svc);
    for (const note of run.notes) progress(note);
    progress(`load average ${loadavg()[0].toFixed(2)}`);
  } finally {
    await run.close();
  }
}
void main();
