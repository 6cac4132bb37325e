import type { Queue } from 'bullmq';
import { eventsQueueState } from './bench-redis.js';
import { eventRequestBody, type EventStream } from './event-generator.js';
import { runRetryingLoad, type RetryingLoadResult } from './retrying-load.js';
import type { ServiceProcess } from './service-process.js';
import { sleep } from './tsx-child.js';

export interface SendAndDrainOptions {
  svc: ServiceProcess;
  /** A LOG_EVENTS key of the project. */
  key: string;
  projectId: string;
  /** The events sent: request i is `eventRequest(stream, i)`. */
  stream: EventStream;
  requests: number;
  connections: number;
  /** The service's events queue (drained = stored and reflected). */
  queue: Queue;
  /** Bound on sending plus draining. */
  maxSec: number;
  progress: (message: string) => void;
}

export interface SendAndDrainResult {
  load: RetryingLoadResult;
  /** Seconds until every request was accepted. */
  acceptedSec: number;
  /** Seconds until every event was stored (the events queue empty); NaN when not within `maxSec`. */
  seconds: number;
  /** The queue when the wait ended. */
  state: { pending: number; failed: number };
  /** Jobs still pending at the first look after every request was accepted (-1: not seen). */
  pendingWhenAccepted: number;
}

/**
 * Sends `requests` LogEvents requests over `connections` (a refused one is sent again: every
 * event must arrive) and waits until the events queue is empty: a job completes only after its
 * rows are in ClickHouse and its profile script ran (workers/ingestion/events.processor.ts), so
 * an empty queue is "stored and reflected". The queue is polled every 50 ms while the requests
 * still go out, so the end is seen within 50 ms whichever finishes last; progress every 5 s.
 */
export async function sendAndDrain(o: SendAndDrainOptions): Promise<SendAndDrainResult> {
  const started = performance.now();
  const deadline = started + o.maxSec * 1000;
  let accepted = 0;
  let acceptedAt = NaN;
  let loadDone = false;
  const loading = runRetryingLoad({
    baseUrl: o.svc.baseUrl,
    path: '/v1/LogEvents',
    connections: o.connections,
    requests: o.requests,
    maxSec: o.maxSec,
    headers: { 'x-api-key': o.key },
    body: (i) => eventRequestBody(o.projectId, o.stream, i, Date.now()),
    onAccepted: (n) => {
      accepted = n;
      if (n === o.requests) acceptedAt = performance.now();
    },
  });
  void loading.finally(() => (loadDone = true)).catch(() => undefined);
  let state = { pending: -1, failed: 0 };
  let doneAt = NaN;
  let pendingWhenAccepted = -1;
  let lastReport = performance.now();
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(0);
  while (performance.now() < deadline && !(loadDone && accepted < o.requests)) {
    await sleep(50);
    if (performance.now() - lastReport >= 5000) {
      lastReport = performance.now();
      const pending = accepted < o.requests ? '' : `, ${(await eventsQueueState(o.queue)).pending.toLocaleString('en')} jobs still pending`;
      o.progress(
        `${elapsed()} s: ${(accepted * o.stream.eventsPerRequest).toLocaleString('en')} of ${(o.requests * o.stream.eventsPerRequest).toLocaleString('en')} events accepted${pending}`,
      );
    }
    if (accepted < o.requests) continue;
    state = await eventsQueueState(o.queue);
    if (pendingWhenAccepted < 0) pendingWhenAccepted = state.pending;
    if (state.pending === 0) {
      doneAt = performance.now();
      break;
    }
  }
  const load = await loading;
  return { load, acceptedSec: (acceptedAt - started) / 1000, state, seconds: (doneAt - started) / 1000, pendingWhenAccepted };
}

/** Throws unless every request was accepted and every event stored, with no failed job. */
export function checkDrained(r: SendAndDrainResult, requests: number, maxSec: number): void {
  if (r.load.failed > 0) throw new Error(`${r.load.failed} LogEvents requests failed (${JSON.stringify(r.load.statusCodes)}): ${r.load.failures.join('; ')}`);
  if (r.load.accepted !== requests) throw new Error(`only ${r.load.accepted} of ${requests} requests were accepted within ${maxSec} s`);
  if (r.state.pending !== 0) throw new Error(`${r.state.pending} jobs still pending after ${maxSec} s`);
  if (r.state.failed > 0) throw new Error(`${r.state.failed} ingestion jobs failed`);
}
