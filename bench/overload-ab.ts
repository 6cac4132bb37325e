/**
 * Compares settings of the overload defence (`npx tsx bench/overload-ab.ts [rounds] NAME:K=V,K=V …`,
 * after `npm run build` with BENCH_SERVICE=dist): each round starts the service once per named
 * setting (in turn, so the machine's drift falls on every side alike) and runs, as the delivery
 * scenario does, a closed loop (its capacity), an open loop at half the first round's capacity and
 * an overload at twice it over 1,200 connections, then half of it again (a limit lowered under the
 * overload must not go on refusing it). The rates are the same for every setting, so the
 * figures compare. Prints per run: capacity, the open loop's p99, the overload's 200s p50/p99,
 * share refused and longest wait, and the p99 and refusals of the half-capacity run after it.
 */
import { runLoad } from './lib/load-runner.js';
import { runOpenLoop } from './lib/open-loop.js';
import { compareSettings, parseSetting, runTool } from './lib/service-settings.js';

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 2);
  const settings = process.argv.slice(3).map(parseSetting);
  if (!(rounds > 0) || settings.length === 0) throw new Error('usage: overload-ab.ts ROUNDS NAME:K=V,K=V [NAME:…]');
  let capacity = 0;
  await compareSettings('overload-ab', rounds, settings, async (target) => {
    await runLoad({ ...target, durationSec: 3, connections: 50 });
    const closed = await runLoad({ ...target, durationSec: 8, connections: 50 });
    if (capacity === 0) capacity = closed.rps;
    const half = await runOpenLoop({ ...target, rate: Math.round(capacity / 2), durationSec: 8, connections: 100, preconnect: true });
    const over = await runOpenLoop({ ...target, rate: Math.round(capacity * 2), durationSec: 8, connections: 1200, preconnect: true });
    // the load back at half the capacity right after the overload: a limit lowered under the overload must not keep refusing it
    const after = await runOpenLoop({ ...target, rate: Math.round(capacity / 2), durationSec: 8, connections: 100, preconnect: true });
    return (
      `closed ${closed.rps.toFixed(0)} req/s (p99 ${closed.p99.toFixed(1)} ms, non-2xx ${closed.non2xx}); ` +
      `open ${Math.round(capacity / 2)}/s p99 ${half.p99.toFixed(1)} ms (503 ${half.refused}, send lag ${half.maxSendLagMs.toFixed(0)}); ` +
      `overload ${Math.round(capacity * 2)}/s: 200s p50 ${over.p50.toFixed(1)} p99 ${over.p99.toFixed(1)} ms, ${over.ok} ok, ` +
      `${((over.refused * 100) / over.sent).toFixed(1)} % 503 (p99 ${over.refusedP99.toFixed(1)}), longest ${over.maxWaitMs.toFixed(0)} ms, send lag ${over.maxSendLagMs.toFixed(0)}; ` +
      `then half again: p99 ${after.p99.toFixed(1)} ms, 503 ${after.refused}`
    );
  });
}

runTool(main);
