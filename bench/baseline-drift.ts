/**
 * Does the baseline drift by itself? (`npx tsx bench/baseline-drift.ts [rounds] [--with-service]`):
 * the delivery scenario's profiles, then closed loops of its bare route one after the other, with
 * its requests/s and the server's CPU per request each; `--with-service` keeps the service alive
 * (idle) meanwhile, as the capacity rounds do.
 */
import { startBaselineServer } from './lib/baseline-server.js';
import { runLoad } from './lib/load-runner.js';
import { ScenarioRun } from './lib/scenario-run.js';
import { DELIVERY_SIZES, prepareDelivery } from './scenarios/delivery.js';
import { loadavg } from 'node:os';

const args = process.argv.slice(2);
const withService = args.includes('--with-service');
const rounds = Number(args.find((a) => !a.startsWith('--')) ?? 6);
const p = DELIVERY_SIZES.full;
const run = ScenarioRun.openTool('drift');
try {
  process.stderr.write(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  const svc = await run.startService();
  const { body } = await prepareDelivery(run, svc, p);
  if (!withService) await run.stopService(svc);
  const b = await startBaselineServer('redis-hash', run.ctx.redisUrl, run.prefix);
  for (let r = 1; r <= rounds; r++) {
    const o = { baseUrl: b.baseUrl, path: '/v1/GetTreatments', connections: p.connections, body };
    await runLoad({ ...o, durationSec: 1 });
    const c0 = b.sampler.cpuSeconds();
    const m = await runLoad({ ...o, durationSec: p.durationSec });
    const cpu = b.sampler.cpuSeconds() - c0;
    process.stderr.write(`round ${r}: ${Math.round(m.rps)} req/s, server ${((cpu * 1e6) / m.ok).toFixed(1)} µs per request, p99 ${m.p99.toFixed(2)} ms\n`);
  }
  await b.stop();
  process.stderr.write(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
} finally {
  await run.close();
}
