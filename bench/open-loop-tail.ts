/**
 * The open loop's tail under settings of the service (`npx tsx bench/open-loop-tail.ts ROUNDS [--rate N]
 * NAME:K=V,K=V …`, after `npm run build` with BENCH_SERVICE=dist): each round starts the service once
 * per named setting, in turn (so the machine's drift falls on every side alike), and runs one open
 * loop of 10 s over 100 connections at the same rate for every setting: `--rate`, or half the
 * first service's closed-loop capacity. Prints per run p50, p99, the answers over 5 ms and the
 * generator's own lateness. With `BENCH_SERVICE_NODE_ARGS=--import FILE` a preload can watch the
 * service's processes meanwhile; `SLOW_LOG=FILE` appends each answer over 5 ms as
 * "epoch-ms-when-due wait-ms status", to line up with what the preload saw.
 */
import { appendFileSync } from 'node:fs';
import { runLoad } from './lib/load-runner.js';
import { runOpenLoop } from './lib/open-loop.js';
import { compareSettings, parseSetting, runTool } from './lib/service-settings.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rateAt = args.indexOf('--rate');
  let rate = rateAt >= 0 ? Number(args.splice(rateAt, 2)[1]) : 0;
  const rounds = Number(args[0] ?? 4);
  const settings = args.slice(1).map(parseSetting);
  if (!(rounds > 0) || settings.length === 0 || !(rate >= 0)) throw new Error('usage: open-loop-tail.ts ROUNDS [--rate N] NAME:K=V,K=V [NAME:…]');
  await compareSettings('open-loop-tail', rounds, settings, async (target, round, name) => {
    await runLoad({ ...target, durationSec: 3, connections: 50 });
    if (rate === 0) rate = Math.round((await runLoad({ ...target, durationSec: 8, connections: 50 })).rps / 2);
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
    if (process.env.SLOW_LOG) appendFileSync(process.env.SLOW_LOG, `# ${name} round ${round}\n${slow.join('\n')}\n`);
    return `${rate} req/s: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${over5} answers over 5 ms, ${r.refused} refused, generator up to ${r.maxSendLagMs.toFixed(0)} ms late`;
  });
}

runTool(main);
