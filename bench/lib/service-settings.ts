import type { OpenLoopOptions } from './open-loop.js';
import { ScenarioRun } from './scenario-run.js';
import type { ServiceProcess } from './service-process.js';
import { DELIVERY_SIZES, prepareDelivery } from '../scenarios/delivery.js';

/** A named setting of the service for the comparison tools: `NAME:K=V,K=V` → its name and environment. */
export function parseSetting(arg: string): { name: string; env: Record<string, string> } {
  const [name, rest = ''] = arg.split(':', 2);
  const env: Record<string, string> = {};
  for (const kv of rest.split(',').filter(Boolean)) {
    const [k, v] = kv.split('=', 2);
    env[k] = v;
  }
  return { name, env };
}

/** GetTreatments of the delivery scenario's catalogue against one started service. */
export type DeliveryTarget = Pick<OpenLoopOptions, 'baseUrl' | 'path' | 'headers' | 'body'>;

/**
 * The comparison tools' driver (overload-ab, open-loop-tail): `rounds` rounds, each starting the
 * service once per setting in turn, so the machine's drift falls on every setting alike. `measure`
 * loads one started service and returns its line; the lines are printed as they come (stderr) and
 * together at the end (stdout). The catalogue and profiles are made once, by the first service.
 */
export async function compareSettings(
  tool: string,
  rounds: number,
  settings: readonly { name: string; env: Record<string, string> }[],
  measure: (target: DeliveryTarget, round: number, name: string, svc: ServiceProcess) => Promise<string>,
): Promise<void> {
  const run = ScenarioRun.openTool(tool);
  const lines: string[] = [];
  let prepared: Awaited<ReturnType<typeof prepareDelivery>> | undefined;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const s of settings) {
        const svc = await run.startService({ env: s.env, label: s.name });
        prepared ??= await prepareDelivery(run, svc, { ...DELIVERY_SIZES.full, users: 20_000 });
        const target = { baseUrl: svc.baseUrl, path: '/v1/GetTreatments', headers: { 'x-api-key': prepared.keys.delivery }, body: prepared.body };
        const line = `round ${round} ${s.name}: ${await measure(target, round, s.name, svc)}`;
        lines.push(line);
        run.ctx.progress(line);
        await run.stopService(svc, s.name);
      }
    }
  } finally {
    await run.close();
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Runs a tool's main, printing its failure and exiting 1. */
export function runTool(main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
