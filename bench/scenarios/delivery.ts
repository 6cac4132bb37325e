import { utcDay } from '../../shared/aggregation/index.js';
import { dailyCountKey } from '../../shared/profiles/index.js';
import { startBaselineServer } from '../lib/baseline-server.js';
import { seedProfiles, type SeedProfile } from '../lib/bench-redis.js';
import { userIdOf } from '../lib/event-generator.js';
import { checkLoad, type LoadOptions } from '../lib/load-runner.js';
import { runOpenLoop } from '../lib/open-loop.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ProjectKeys, ServiceProcess } from '../lib/service-process.js';
import { PROJECT_ID } from './log-events.js';

export interface DeliveryParams {
  users: number;
  treatments: number;
  surfaces: number;
  surfacesPerRequest: number;
  connections: number;
  durationSec: number;
  warmupSec: number;
  /** Connections of the open-loop run (enough that none waits for a free one at the target rate). */
  openLoopConnections: number;
}

export const DELIVERY_SIZES: Record<Size, DeliveryParams> = {
  tiny: { users: 100, treatments: 50, surfaces: 5, surfacesPerRequest: 2, connections: 2, durationSec: 1, warmupSec: 0.3, openLoopConnections: 4 },
  full: { users: 100_000, treatments: 50, surfaces: 5, surfacesPerRequest: 2, connections: 50, durationSec: 10, warmupSec: 3, openLoopConnections: 100 },
};

const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'ES', 'IT', 'NL', 'SE'];
const surfaceName = (k: number) => `surface_${k + 1}`;

interface Catalogue {
  ageId: string;
  countryId: string;
  premiumId: string;
  purchasesId: string;
}

/**
 * Five surfaces; five treatment types, type k on surfaces k and k+1; data fields `age`,
 * `country`, `premium`, `first_name` (user properties) and a 7-day purchase count (an event
 * aggregation read from the profile's day counters).
 */
export async function createCatalogue(svc: ServiceProcess, keys: ProjectKeys, p: DeliveryParams): Promise<Catalogue> {
  const m = (op: string, body: Record<string, unknown>) => svc.call(op, keys.management, { projectId: keys.projectId, ...body });
  for (let k = 0; k < p.surfaces; k++) await m('InsertSurface', { name: surfaceName(k) });
  for (let k = 0; k < p.surfaces; k++) {
    await m('InsertTreatmentType', {
      treatmentTypeName: `type_${k + 1}`,
      lastModifiedBy: 'bench',
      surfaces: [{ surfaceName: surfaceName(k) }, { surfaceName: surfaceName((k + 1) % p.surfaces) }],
      contentFieldTypes: [
        { fieldName: 'title', maximumLengthAllowed: 200, isPerLanguage: true },
        { fieldName: 'body', maximumLengthAllowed: 1000, isPerLanguage: true },
        { fieldName: 'link', maximumLengthAllowed: 200 },
      ],
    });
  }
  const field = async (name: string, dataType: string) => (await m('InsertDataField', { name, userProperty: { dataType } })).dataField.dataFieldId as string;
  const catalogue: Catalogue = { ageId: await field('age', 'INTEGER'), countryId: await field('country', 'STRING'), premiumId: await field('premium', 'BOOLEAN'), purchasesId: '' };
  await field('first_name', 'STRING');
  const agg = await m('GetDataFields', { dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }] });
  catalogue.purchasesId = agg.dataFields[0].dataFieldId;
  for (let t = 0; t < p.treatments; t++) await m('InsertTreatment', treatmentBody(t, p, catalogue));
  return catalogue;
}

/** Three rules per treatment over profile data, with thresholds that let part of the users through. */
function treatmentBody(t: number, p: DeliveryParams, c: Catalogue): Record<string, unknown> {
  const countries = [0, 1, 2, 3].map((j) => COUNTRIES[(t + j * 2) % COUNTRIES.length]);
  const third =
    t % 2 === 0
      ? { dataFieldId: c.premiumId, condition: 'EQUALS', rhsValue: 'true', dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE' }
      : { dataFieldId: c.purchasesId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: String(t % 4) };
  const text = (lang: string) => [
    { fieldName: 'title', stringValue: lang === 'en' ? `Offer ${t} for {{first_name|you}}` : `Angebot ${t} für {{first_name|dich}}` },
    { fieldName: 'body', stringValue: `${lang}: treatment ${t} body text with some length to render and return to the client.` },
  ];
  return {
    name: `treatment ${t}`,
    description: 'benchmark treatment',
    treatmentTypeName: `type_${(t % p.surfaces) + 1}`,
    lastModifiedBy: 'bench',
    startTimestamp: new Date(Date.now() - 3600_000).toISOString(),
    shouldPublish: true,
    content: {
      contentByLanguage: ['en', 'de'].map((languageCode) => ({ languageCode: { languageCode }, contentFields: text(languageCode) })),
      languageAgnosticContentFields: [{ fieldName: 'link', stringValue: `https://example.com/offer/${t}` }],
    },
    eligibilityRules: {
      rules: [
        { dataFieldId: c.ageId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: String(18 + ((t * 7) % 40)) },
        { dataFieldId: c.countryId, condition: 'ANY_OF', rhsValue: JSON.stringify(countries) },
        third,
      ],
    },
  };
}

export function profileOf(i: number, c: Catalogue, today: string): SeedProfile {
  return {
    userProperties: {
      age: { longValue: String(18 + ((i * 13) % 60)) },
      country: { stringValue: COUNTRIES[i % COUNTRIES.length] },
      premium: { booleanValue: i % 3 === 0 },
      first_name: { stringValue: `Name${i}` },
    },
    fields: { [dailyCountKey(c.purchasesId, today)]: String(i % 10) },
  };
}

/** GetTreatments of a random user for a random pair of neighbouring surfaces, up to 3 treatments each. */
export function getTreatmentsBodies(p: DeliveryParams): () => string {
  return () => {
    const user = userIdOf(Math.floor(Math.random() * p.users));
    const first = Math.floor(Math.random() * p.surfaces);
    const surfaces = Array.from({ length: p.surfacesPerRequest }, (_, j) => `{"surface":"${surfaceName((first + j) % p.surfaces)}","maximumTreatmentCount":3}`);
    return `{"projectId":"${PROJECT_ID}","userId":"${user}","surfaces":[${surfaces.join(',')}],"languageCode":"en"}`;
  };
}

async function sampleResponses(svc: ServiceProcess, key: string, body: () => string, n: number): Promise<number> {
  let returned = 0;
  for (let i = 0; i < n; i++) returned += ((await svc.call<{ userTreatments?: unknown[] }>('GetTreatments', key, JSON.parse(body()))).userTreatments ?? []).length;
  return returned / n;
}

/**
 * GetTreatments for 2 surfaces of a project of 50 LIVE treatments with 3 rules each, over
 * seeded profiles; baseline: a bare Fastify route answering one HGETALL of the same profile.
 */
export async function runDelivery(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = DELIVERY_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'delivery');
  Object.assign(run.params, p);
  try {
    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    run.progress(`catalogue: ${p.surfaces} surfaces, ${p.treatments} LIVE treatments with 3 rules each`);
    const catalogue = await createCatalogue(svc, keys, p);
    const today = utcDay(Date.now());
    await seedProfiles(run.redis, run.keys, PROJECT_ID, p.users, userIdOf, (i) => profileOf(i, catalogue, today), (done) => {
      if (done % 20_000 === 0 || done === p.users) run.progress(`seeded ${done.toLocaleString('en')} / ${p.users.toLocaleString('en')} profiles`);
    });
    const body = getTreatmentsBodies(p);
    run.notes.push(`treatments returned per response (sample of 50): ${(await sampleResponses(svc, keys.delivery, body, 50)).toFixed(2)} of at most ${3 * p.surfacesPerRequest}`);

    const load = (baseUrl: string, headers: Record<string, string> = {}): LoadOptions => ({ baseUrl, path: '/v1/GetTreatments', connections: p.connections, durationSec: p.durationSec, headers, body });
    const svcHeaders = { 'x-api-key': keys.delivery };
    // the service stops while the baseline runs (it would take CPU from it) and starts again on
    // the same data for each later run
    await run.stopService(svc, 'service (catalogue set-up)');

    run.progress('baseline: bare Fastify + one Redis HGETALL');
    const base = await startBaselineServer('redis-hash', ctx.redisUrl, run.prefix);
    const b = await run.measureLoad('baseline (closed loop)', () => base.sampler.cpuSeconds(), load(base.baseUrl), p.warmupSec, 'baseline server');
    // open loop: a constant arrival rate of half the baseline's capacity, whatever the latency
    const rate = Math.max(1, Math.round(b.rps / 2));
    run.params.openLoopRate = rate;
    const openLoop = async (label: string, baseUrl: string, cpu: () => number, serverLabel: string, headers: Record<string, string> = {}) => {
      const o = { baseUrl, path: '/v1/GetTreatments', rate, durationSec: p.durationSec, connections: p.openLoopConnections, headers, body };
      // a warm-up at the same rate: the generator's connections and code paths, not measured
      await runOpenLoop({ ...o, durationSec: p.warmupSec });
      const m = await run.withCpu(cpu, () => runOpenLoop(o));
      checkLoad(label, m.value);
      run.loadNote(label, m.value, m, serverLabel);
      return m.value;
    };
    const bOpen = await openLoop(`baseline (open loop, ${rate} req/s)`, base.baseUrl, () => base.sampler.cpuSeconds(), 'baseline server');
    await base.stop();

    run.progress(`service, 1 API process: ${p.connections} connections, ${p.warmupSec} s warm-up + ${p.durationSec} s; then ${rate} req/s open loop`);
    const s1 = await run.startService({ apiProcesses: 1 });
    const r = await run.measureLoad('service, 1 API process (closed loop)', () => s1.sampler.cpuSeconds(), load(s1.baseUrl, svcHeaders), p.warmupSec);
    const rOpen = await openLoop(`service, 1 API process (open loop, ${rate} req/s)`, s1.baseUrl, () => s1.sampler.cpuSeconds(), 'service', svcHeaders);
    const peaks1 = await run.stopService(s1, 'service (1 API process)');

    run.progress(`service, 2 API processes: ${p.connections} connections, ${p.warmupSec} s warm-up + ${p.durationSec} s`);
    const s2 = await run.startService({ apiProcesses: 2 });
    const r2 = await run.measureLoad('service, 2 API processes (closed loop)', () => s2.sampler.cpuSeconds(), load(s2.baseUrl, svcHeaders), p.warmupSec);
    const peaks2 = await run.stopService(s2, 'service (2 API processes)');

    const baselineLabel = 'bare Fastify route answering one HGETALL of the profile';
    const openLabel = `the same baseline at the same open-loop rate (${rate} req/s)`;
    return run.result({
      requestsPerSec: figure({ label: 'GetTreatments requests/s', unit: 'req/s', value: r.rps, baseline: b.rps, baselineLabel, better: 'higher', target: { on: 'ratio', bound: 'min', limit: 0.6 } }),
      p50Ms: figure({ label: 'GetTreatments p50 at saturation', unit: 'ms', value: r.p50, baseline: b.p50, baselineLabel, better: 'lower' }),
      p99Ms: figure({ label: 'GetTreatments p99 at saturation', unit: 'ms', value: r.p99, baseline: b.p99, baselineLabel, better: 'lower' }),
      openLoopP50Ms: figure({ label: 'GetTreatments p50, open loop at half the baseline capacity', unit: 'ms', value: rOpen.p50, baseline: bOpen.p50, baselineLabel: openLabel, better: 'lower' }),
      openLoopP99Ms: figure({ label: 'GetTreatments p99, open loop at half the baseline capacity', unit: 'ms', value: rOpen.p99, baseline: bOpen.p99, baselineLabel: openLabel, better: 'lower', target: { on: 'value', bound: 'max', limit: 10 } }),
      requestsPerSec2Api: figure({ label: 'GetTreatments requests/s, API_PROCESSES=2', unit: 'req/s', value: r2.rps, baseline: b.rps, baselineLabel, better: 'higher', target: { on: 'ratio', bound: 'min', limit: 0.6 } }),
      p99Ms2Api: figure({ label: 'GetTreatments p99 at saturation, API_PROCESSES=2', unit: 'ms', value: r2.p99, baseline: b.p99, baselineLabel, better: 'lower' }),
      ...rssFigures(peaks1, s1.readyRss, { api: true }),
      ...rssFigures(peaks2, s2.readyRss, { api: true }, { key: '2Api', label: 'API_PROCESSES=2' }),
    });
  } finally {
    await run.close();
  }
}

export const deliveryScenario: Scenario = {
  name: 'delivery',
  summary: 'GetTreatments for 2 surfaces, 50 LIVE treatments with 3 rules, seeded profiles, vs a bare Fastify route with one HGETALL',
  run: runDelivery,
};
