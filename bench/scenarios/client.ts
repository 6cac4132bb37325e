import { TdsClient } from '../../client/src/index.js';
import { figure, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { freePort, spawnTsxChild, waitForHttp } from '../lib/tsx-child.js';

export interface ClientParams {
  /** GetTreatments calls per measured round, for each of the client and the baseline. */
  calls: number;
  rounds: number;
  /** Calls in flight at once. */
  concurrency: number;
  warmupCalls: number;
}

export const CLIENT_SIZES: Record<Size, ClientParams> = {
  tiny: { calls: 300, rounds: 2, concurrency: 4, warmupCalls: 100 },
  full: { calls: 5000, rounds: 4, concurrency: 8, warmupCalls: 2000 },
};

/** The client's added CPU per GetTreatments call may be at most this (the target). */
export const ADDED_CPU_MS_TARGET = 1;

const REQUEST = {
  userId: 'u42',
  surfaces: [
    { surface: 'home', maximumTreatmentCount: 3 },
    { surface: 'side', maximumTreatmentCount: 3 },
  ],
  contextualAttributes: [{ key: 'country', stringValue: 'DE' }],
};

/** CPU milliseconds of this process per call, `calls` calls with `concurrency` in flight. */
async function cpuPerCall(call: () => Promise<unknown>, calls: number, concurrency: number): Promise<number> {
  let started = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started++ < calls) await call();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / calls;
}

/**
 * The CPU the client adds to a GetTreatments call, in the calling process: `getTreatments` of the
 * client (its timeout, error mapping, the user kept on every treatment) against a bare `fetch`
 * POST + `res.json()` of the same request, both to the same stub server in a child process (so the
 * server's CPU counts for neither), in alternating rounds.
 */
export async function runClient(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = CLIENT_SIZES[ctx.size];
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const port = await freePort();
  const child = spawnTsxChild('bench/lib/stub-delivery-server.ts', { env: { STUB_PORT: String(port) } });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${baseUrl}/readyz`, child, 30_000);
    const client = new TdsClient({ baseUrl, projectId: 'bench', apiKey: 'bench-key', timeoutMs: 10_000, flushOnPageHide: false });
    const withClient = () => client.getTreatments(REQUEST);
    const bare = async () => {
      const res = await fetch(`${baseUrl}/v1/GetTreatments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'bench-key' },
        body: JSON.stringify({ ...REQUEST, projectId: 'bench' }),
      });
      if (res.status !== 200) throw new Error(`stub answered ${res.status}`);
      return res.json();
    };
    const answer = await withClient();
    if (answer.userTreatments.length !== 6 || answer.fallback) throw new Error('the client did not read the stub answer');
    ctx.progress(`[client] warm-up: ${p.warmupCalls} calls each`);
    await cpuPerCall(withClient, p.warmupCalls, p.concurrency);
    await cpuPerCall(bare, p.warmupCalls, p.concurrency);
    const sums = { client: 0, bare: 0 };
    for (let r = 0; r < p.rounds; r++) {
      ctx.progress(`[client] round ${r + 1} of ${p.rounds}: ${p.calls} calls each, ${p.concurrency} in flight`);
      // alternate which goes first, so a drift of the machine's load weighs on both alike
      const order = r % 2 === 0 ? (['client', 'bare'] as const) : (['bare', 'client'] as const);
      for (const which of order) sums[which] += await cpuPerCall(which === 'client' ? withClient : bare, p.calls, p.concurrency);
    }
    await client.close(100);
    const value = sums.client / p.rounds;
    const baseline = sums.bare / p.rounds;
    const added = value - baseline;
    return {
      scenario: 'client',
      size: ctx.size,
      startedAt,
      seconds: (performance.now() - started) / 1000,
      params: { ...p },
      figures: {
        cpuMsPerCall: figure({
          label: 'client CPU per GetTreatments call',
          unit: 'ms',
          value,
          baseline,
          baselineLabel: 'bare fetch POST + res.json() of the same request',
          better: 'lower',
          target: { on: 'value', bound: 'max', limit: Number((baseline + ADDED_CPU_MS_TARGET).toFixed(3)) },
        }),
      },
      notes: [
        `the client adds ${(added * 1000).toFixed(1)} µs of CPU per call (target: at most ${ADDED_CPU_MS_TARGET} ms), measured in the calling process over ${p.rounds} alternating rounds of ${p.calls} calls; both include the process's own HTTP stack (undici)`,
        'the answer: 2 surfaces × 3 treatments with rendered content, from a stub server in a child process (the service itself is measured by `delivery`)',
      ],
    };
  } finally {
    await child.stop(10_000);
  }
}

export const clientScenario: Scenario = {
  name: 'client',
  summary: 'CPU the TypeScript client adds to a GetTreatments call, vs a bare fetch of the same request',
  run: runClient,
};
