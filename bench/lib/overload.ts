import { runOpenLoop, type OpenLoopOptions, type OpenLoopResult } from './open-loop.js';

/** What the overload run and the recovery probes send, and how. */
export interface OverloadOptions {
  /** The request: base URL, path, headers, body. */
  target: Pick<OpenLoopOptions, 'baseUrl' | 'path' | 'headers' | 'body' | 'preconnect'>;
  /** Arrivals per second of the overload (twice the service's measured capacity). */
  rate: number;
  durationSec: number;
  connections: number;
  /** Arrivals per second of the light probe load that measures the idle level and the recovery. */
  probeRate: number;
  /** Consecutive normal probes that make "recovered". */
  window: number;
  /** How long the probes look for the recovery after the overload stops. */
  maxRecoverySec: number;
  progress: (message: string) => void;
}

/** The latency of the light probe load on the service before the overload. */
export interface IdleLevel {
  p50: number;
  p99: number;
  /** A probe answered 200 within this many ms is back to the idle level. */
  thresholdMs: number;
}

export interface OverloadOutcome {
  overload: OpenLoopResult;
  /** From the end of the overload to the first of `window` consecutive normal probes (ms); `maxRecoverySec` when never. */
  recoveryMs: number;
  recovered: boolean;
  /** Probes above the idle level after the recovery (while the probes went on). */
  relapses: number;
  probes: OpenLoopResult;
}

/** A probe is back to normal when answered 200 within twice the idle p99 (and at least the idle p99 + 2 ms: sub-ms p99s jitter). */
export function idleThreshold(p99: number): number {
  return Math.max(2 * p99, p99 + 2);
}

/** The light probe load on the service as it is (before the overload): its latency is the idle level. */
export async function measureIdleLevel(o: OverloadOptions, seconds: number): Promise<IdleLevel> {
  const r = await runOpenLoop({ ...o.target, rate: o.probeRate, durationSec: seconds, connections: 4 });
  if (r.ok === 0) throw new Error(`idle probes: no 200 answer (${JSON.stringify(r.statusCodes)}, ${r.errors} errors)`);
  return { p50: r.p50, p99: r.p99, thresholdMs: idleThreshold(r.p99) };
}

/**
 * Recovery from a stream of probe answers in the order they were due: the first probe of
 * `window` consecutive normal ones. Answers may settle out of order; they are judged in order.
 */
export class RecoveryDetector {
  private readonly normal: (boolean | undefined)[] = [];
  private cursor = 0;
  private run = 0;
  /** Index of the first probe of the first normal window, once seen. */
  recoveredAt: number | undefined;
  relapses = 0;

  constructor(
    private readonly window: number,
    private readonly thresholdMs: number,
  ) {}

  add(i: number, status: number, waitMs: number): void {
    this.normal[i] = status === 200 && waitMs <= this.thresholdMs;
    while (this.normal[this.cursor] !== undefined) {
      const ok = this.normal[this.cursor] as boolean;
      if (this.recoveredAt === undefined) {
        this.run = ok ? this.run + 1 : 0;
        if (this.run === this.window) this.recoveredAt = this.cursor - this.window + 1;
      } else if (!ok) this.relapses++;
      this.cursor++;
    }
  }
}

/**
 * An open-loop overload at `rate` for `durationSec`, every request answered (200 or 503) counted
 * with its wait; when the overload stops, the light probe load starts and runs until the probes
 * are back to the idle level for `window` probes in a row (and 1 s more, to see relapses), or
 * `maxRecoverySec`.
 */
export async function overloadAndRecover(o: OverloadOptions, idle: IdleLevel): Promise<OverloadOutcome> {
  let overloadStarted!: (at: number) => void;
  const startedAt = new Promise<number>((resolve) => (overloadStarted = resolve));
  const overload = runOpenLoop({
    ...o.target,
    rate: o.rate,
    durationSec: o.durationSec,
    connections: o.connections,
    maxSec: o.durationSec + 30,
    tickSec: 5,
    onStart: overloadStarted,
    onTick: (sec, sent, answered) => o.progress(`overload: ${sec.toFixed(0)} s, ${sent.toLocaleString('en')} sent, ${answered.toLocaleString('en')} answered`),
  });
  // the overload's clock starts once its connections are open
  const overloadEnd = (await Promise.race([startedAt, overload.then(() => NaN)])) + o.durationSec * 1000;
  if (Number.isNaN(overloadEnd)) throw new Error('the overload run ended before it started');
  await new Promise((r) => setTimeout(r, Math.max(0, overloadEnd - performance.now())));
  let probeStart = NaN;
  const detector = new RecoveryDetector(o.window, idle.thresholdMs);
  const stop = new AbortController();
  let stopTimer: NodeJS.Timeout | undefined;
  const probes = await runOpenLoop({
    ...o.target,
    // no preconnection (its delay would shift the probes' clock): the first probes open their
    // connections, and that time counts in their wait, as a new client's would
    preconnect: false,
    rate: o.probeRate,
    durationSec: o.maxRecoverySec,
    connections: 16,
    signal: stop.signal,
    tickSec: 5,
    onStart: (at) => (probeStart = at),
    onTick: (sec) =>
      o.progress(`recovery probes: ${sec.toFixed(0)} s${detector.recoveredAt === undefined ? ', not back to the idle level yet' : ', recovered'}`),
    onAnswer: (a) => {
      detector.add(a.i, a.status, a.waitMs);
      if (detector.recoveredAt !== undefined && stopTimer === undefined) stopTimer = setTimeout(() => stop.abort(), 1000);
    },
  });
  clearTimeout(stopTimer);
  const recovered = detector.recoveredAt !== undefined;
  // the probes' due times are spaced 1000 / probeRate from their start
  const recoveryMs = recovered ? probeStart - overloadEnd + ((detector.recoveredAt as number) * 1000) / o.probeRate : o.maxRecoverySec * 1000;
  return { overload: await overload, recoveryMs: Math.max(0, recoveryMs), recovered, relapses: detector.relapses, probes };
}

/** A line for the notes: what the overload run did. */
export function overloadNote(label: string, r: OpenLoopResult): string {
  const share = r.answered > 0 ? (100 * r.refused) / r.answered : NaN;
  return (
    `${label}: ${r.sent.toLocaleString('en')} sent, ${r.ok.toLocaleString('en')} answered 200 (p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms), ` +
    `${r.refused.toLocaleString('en')} refused with 503 (${share.toFixed(1)} %, p99 ${r.refusedP99.toFixed(2)} ms), ${r.errors} errors or timeouts, ` +
    `longest wait ${r.maxWaitMs.toFixed(1)} ms (${r.overOneSecond} over 1 s; slowest: ${slowestClause(r)}); ` +
    `the generator sent up to ${r.maxSendLagMs.toFixed(1)} ms late${generatorWarning(r)}, and wrote up to ${r.maxWriteLagMs.toFixed(1)} ms late (the rest: waiting for a free connection)`
  );
}

/** The slowest requests of a run: how long each waited, its status, and when it was due. */
export function slowestClause(r: OpenLoopResult): string {
  return r.slowest
    .map(
      (x) =>
        `${x.waitMs.toFixed(0)} ms (${x.status || 'no answer'}, due at ${x.dueSec.toFixed(2)} s, written ${x.writeLagMs.toFixed(0)} ms late${x.reopened ? ', on a connection opened again' : ''})`,
    )
    .join(', ');
}

/** Above this, the open-loop generator's own lateness is worth a warning. */
const GENERATOR_LAG_WARN_MS = 20;

/** Said when the open-loop generator itself sent requests late: its lag is in every wait. */
export function generatorWarning(r: OpenLoopResult): string {
  return r.maxSendLagMs > GENERATOR_LAG_WARN_MS
    ? ` (over ${GENERATOR_LAG_WARN_MS} ms: the load generator was short of CPU, and its lag counts in the waits)`
    : '';
}
