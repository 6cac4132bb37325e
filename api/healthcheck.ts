import { loadConfig, type Config } from '../shared/platform/config.js';
import { childSpecs } from './supervisor.js';

/**
 * The container image's healthcheck (`node dist/api/healthcheck.js`): healthy only when every
 * process the supervisor runs for this environment (`ROLE`, `API_PROCESSES`) answers 200 on its own
 * `/readyz`: the background process on `OPS_PORT`, API process i on `OPS_PORT + i`. Exit 0 when all
 * do, else 1 with one line per process that did not.
 */

const PROBE_TIMEOUT_MS = 2_500;

export interface ProbeTarget {
  child: string;
  url: string;
}

/** The `/readyz` of every supervised process of `config`, on the loopback when the ops listener is on every address. */
export function healthcheckTargets(config: Readonly<Config>): ProbeTarget[] {
  if (config.opsPort === 0) throw new Error('OPS_PORT is 0 (a free port per process): there is no fixed port to probe');
  const host = config.opsHost === '0.0.0.0' || config.opsHost === '::' ? '127.0.0.1' : config.opsHost;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return childSpecs(config).map((spec) => ({ child: spec.name, url: `http://${hostPart}:${spec.env.OPS_PORT}/readyz` }));
}

/** The targets that did not answer 200 in time, with the reason. */
export async function probe(targets: readonly ProbeTarget[], timeoutMs = PROBE_TIMEOUT_MS): Promise<string[]> {
  const results = await Promise.all(
    targets.map(async (t) => {
      try {
        const res = await fetch(t.url, { signal: AbortSignal.timeout(timeoutMs) });
        await res.arrayBuffer();
        return res.status === 200 ? undefined : `${t.child} (${t.url}): ${res.status}`;
      } catch (err) {
        return `${t.child} (${t.url}): ${(err as Error).message}`;
      }
    }),
  );
  return results.filter((r): r is string => r !== undefined);
}

async function main(): Promise<void> {
  let targets: ProbeTarget[];
  try {
    // exit 1, not loadConfigOrExit's 2: Docker reserves 2, and 1 is "unhealthy"
    targets = healthcheckTargets(loadConfig(process.env));
  } catch (err) {
    console.error(`healthcheck: ${(err as Error).message}`);
    process.exit(1);
  }
  const failed = await probe(targets);
  for (const f of failed) console.error(`not ready: ${f}`);
  process.exit(failed.length === 0 ? 0 : 1);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  void main();
}
