/**
 * The open loop's tail under settings of the service (`npx tsx bench/open-loop-tail.ts ROUNDS [--rate N]
 * NAME:K=V,K=V …`, after `npm run build` with BENCH_SERVICE=dist): for each named setting in turn
 * (so the machine's drift falls on every side alike), the service is started and measured with
 * ROUNDS open loops of 10 s over 100 connections at the same rate for every setting: `--rate`, or
 * half the first setting's closed-loop capacity. Prints per round p50, p99, the answers over 5 ms
 * and the generator's own lateness. With `BENCH_SERVICE_NODE_ARGS=--import FILE` a preload can
 * watch the service's processes meanwhile; `SLOW_LOG=FILE` writes each answer over 5 ms as
 * "epoch-ms-when-due wait-ms status", to line up with what the preload saw.
 */
import { appendFileSync } from 'node:fs';
import { runLoad } from './lib/load-runner.js';
import { runOpenLoop } from './lib/open-loop.js';
import { ScenarioRun } from './lib/scenario-run.js';
import { DELIVERY_SIZES, prepareDelivery } from './scenarios/delivery.js';
import { parseSetting } from './lib/service-settings.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rateAt = args.indexOf('--rate');
  let rate = rateAt >= 0 ? Number(args.splice(rateAt, 2)[1]) : 0;
  const rounds = Number(args[0] ?? 4);
  const settings = args.slice(1).map(parseSetting);
  if (!(rounds > 0) || settings.length === 0 || !(rate >= 0)) throw new Error('usage: open-loop-tail.ts ROUNDS [--rate N] NAME:K=V,K=V [NAME:…]');
  const run = ScenarioRun.openTool('open-loop-tail');
  const p = { ...DELIVERY_SIZES.full, users: 20_000 };
  const lines: string[] = [];
  let prepared: Awaited<ReturnType<typeof prepareDelivery>> | undefined;
  try {
    for (const s of settings) {
      const svc = await run.startService({ env: s.env, label: s.name });
      prepared ??= await prepareDelivery(run, svc, p);
      const target = { baseUrl: svc.baseUrl, path: '/v1/GetTreatments', headers: { 'x-api-key': prepared.keys.delivery }, body: prepared.body };
      await runLoad({ ...target, durationSec: 3, connections: 50 });
      if (rate === 0) rate = Math.round((await runLoad({ ...target, durationSec: 8, connections: 50 })).rps / 2);
      for (let round = 1; round <= rounds; round++) {
        let over5 = 0;
        let epoch0 = 0;
        const slow: string[] = [];
        const r = await runOpenLoop({
          ...target,
          rate,
          durationSec: 10,
          connections: 100,
          preconnect: true,
          onStart: (at) => (epoch0 = performance.timeOrigin + at),
          onAnswer: (a) => {
            if (a.waitMs <= 5) return;
            over5++;
            if (process.env.SLOW_LOG) slow.push(`${(epoch0 + a.dueMs).toFixed(1)} ${a.waitMs.toFixed(1)} ${a.status}`);
          },
        });
        if (process.env.SLOW_LOG) appendFileSync(process.env.SLOW_LOG, `# ${s.name} round ${round}\n${slow.join('\n')}\n`);
        const line = `${s.name} round ${round}: ${rate} req/s: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${over5} answers over 5 ms, ${r.refused} refused, generator up to ${r.maxSendLagMs.toFixed(0)} ms late`;
        lines.push(line);
        run.ctx.progress(line);
      }
      await run.stopService(svc, s.name);
    }
  } finally {
    await run.close();
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
