import type { PropertyValue } from '../../shared/ingestion/index.js';
import type { EventInput } from '../../shared/ingestion/event-rows.warehouse.js';

/** Event names of the generated traffic; every request cycles through them. */
export const EVENT_NAMES = ['page_view', 'click', 'purchase', 'search'] as const;

export interface EventStream {
  /** Makes insertIds unique per run, so two runs on one Redis never de-duplicate each other. */
  runId: string;
  users: number;
  eventsPerRequest: number;
}

export interface GeneratedRequest {
  userId: string;
  events: EventInput[];
}

export function userIdOf(n: number): string {
  return `user-${n}`;
}

/**
 * The i-th LogEvents request of a stream: one user (requests go round the users), events with a
 * unique insertId, a small property map, and a user property on the last event. Deterministic
 * apart from `nowMs`, so the ingest baseline stores exactly the rows the service stores.
 */
export function eventRequest(s: EventStream, i: number, nowMs: number): GeneratedRequest {
  const ts = new Date(nowMs).toISOString();
  const events: EventInput[] = [];
  for (let k = 0; k < s.eventsPerRequest; k++) {
    const seq = i * s.eventsPerRequest + k;
    const e: EventInput = {
      eventName: EVENT_NAMES[seq % EVENT_NAMES.length],
      clientEventTimestamp: ts,
      insertId: `${s.runId}-${seq}`,
      eventProperties: { amount: { longValue: String(seq % 100) }, plan: { stringValue: seq % 3 === 0 ? 'pro' : 'basic' } },
    };
    if (k === s.eventsPerRequest - 1) e.userProperties = { last_request: { longValue: String(i) } as PropertyValue };
    events.push(e);
  }
  return { userId: userIdOf(i % s.users), events };
}

export function logEventsBody(projectId: string, r: GeneratedRequest): string {
  return JSON.stringify({ projectId, userId: r.userId, events: r.events });
}

/**
 * `logEventsBody(projectId, eventRequest(s, i, nowMs))`, the same bytes, made from text instead
 * of objects and JSON.stringify: a tenth of the CPU (the load generator shares the service's two
 * cores, and a request of 100 events cost it about 85 µs to build). The run id, names and numbers
 * it inserts need no JSON escaping; the ids that might are escaped once.
 */
export function eventRequestBody(projectId: string, s: EventStream, i: number, nowMs: number): string {
  const ts = new Date(nowMs).toISOString();
  const head = `{"eventName":"`;
  const mid = `","clientEventTimestamp":"${ts}","insertId":"${s.runId}-`;
  let out = `{"projectId":${JSON.stringify(projectId)},"userId":${JSON.stringify(userIdOf(i % s.users))},"events":[`;
  for (let k = 0; k < s.eventsPerRequest; k++) {
    const seq = i * s.eventsPerRequest + k;
    if (k > 0) out += ',';
    out += `${head}${EVENT_NAMES[seq % EVENT_NAMES.length]}${mid}${seq}","eventProperties":{"amount":{"longValue":"${seq % 100}"},"plan":{"stringValue":"${seq % 3 === 0 ? 'pro' : 'basic'}"}}`;
    out += k === s.eventsPerRequest - 1 ? `,"userProperties":{"last_request":{"longValue":"${i}"}}}` : '}';
  }
  return `${out}]}`;
}
