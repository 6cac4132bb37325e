/**
 * A/B of `selectTreatments` between two builds in one process, interleaved so that the machine's
 * drift falls on both alike (`npx tsx bench/micro/select-ab.ts DIST_A DIST_B [rounds]`, each a
 * `dist` directory): the bench's catalogue and profiles, each build with its own default ranking
 * policy and an empty statistics view (a new project), µs of CPU per call per round and the median.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { seedSelection } from './micro-lib.js';

type Delivery = typeof import('../../shared/delivery/index.js');
const [distA, distB] = process.argv.slice(2, 4);
if (!distA || !distB) throw new Error('usage: select-ab.ts DIST_A DIST_B [rounds]');
const rounds = Number(process.argv[4] ?? 10);
const load = async (dist: string) => (await import(pathToFileURL(resolve(dist, 'shared/delivery/index.js')).href)) as Delivery;
const builds = [
  { name: distA, d: await load(distA) },
  { name: distB, d: await load(distB) },
];
const { t, reqs, plan, profiles } = await seedSelection(200);
const now = Date.now();
const runs = builds.map(({ d }) => {
  const ranking = { policy: d.thompsonSampling(), stats: d.statsViewFromHash({}) };
  return (n: number) => {
    for (let i = 0; i < n; i++) d.selectTreatments(plan, reqs[i % 200], profiles[i % 200], ranking, now, 'resp-1');
  };
});
for (const run of runs) run(20_000);
const times: number[][] = [[], []];
for (let r = 0; r < rounds; r++) {
  for (const b of r % 2 === 0 ? [0, 1] : [1, 0]) {
    const t0 = process.cpuUsage();
    runs[b](20_000);
    const u = process.cpuUsage(t0);
    times[b].push((u.user + u.system) / 20_000);
  }
  console.log(`round ${r + 1}/${rounds}: ${times.map((ts) => ts.at(-1)!.toFixed(2)).join(' µs, ')} µs`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
builds.forEach((b, i) => console.log(`${b.name}: median ${median(times[i]).toFixed(2)} µs per selectTreatments`));
console.log(`ratio B/A ${(median(times[1]) / median(times[0])).toFixed(3)}`);
await t.close();
