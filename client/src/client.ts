import type {
  GetTreatmentRequest,
  GetTreatmentResponse,
  GetTreatmentsRequest,
  GetTreatmentsResponse,
  LogEventsRequest,
  LogTreatmentInteractionRequest,
} from './wire.generated.js';
import { TdsError } from './errors.js';
import { defaultFetch, normaliseBaseUrl, postJson, type FetchLike, type Transport } from './http.js';
import { EventQueue, type QueueStats } from './event-queue.js';
import type { BackoffOptions } from './backoff.js';
import { installPageExitFlush, toWireEvent, type TrackEvent } from './events.js';

/** A request without `projectId`: the client's own is filled in. */
export type WithProject<T> = Omit<T, 'projectId'> & { projectId?: string };

export type UserTreatment = NonNullable<GetTreatmentsResponse['userTreatments']>[number];

/** A treatment GetTreatments returned, with the user it was decided for (interactions send it back). */
export interface Treatment extends UserTreatment {
  userId: string;
}

export interface TreatmentsAnswer {
  /** The service's response id; `fallback` for a fallback answer. */
  responseId: string;
  /** Ranked per surface; empty when nothing qualifies. */
  userTreatments: Treatment[];
  /** True when the service timed out or was unavailable and the fallback answered. */
  fallback: boolean;
  /** Why the fallback answered. */
  error?: TdsError;
}

/** What to show when the service does not answer in time: at least the treatment and its surface. */
export type FallbackTreatment = Pick<UserTreatment, 'treatmentId' | 'surface'> & Partial<Omit<UserTreatment, 'treatmentTrackingId'>>;
export type Fallback = { userTreatments: FallbackTreatment[] } | ((request: GetTreatmentsRequest, error: TdsError) => { userTreatments: FallbackTreatment[] });

export type InteractionType = LogTreatmentInteractionRequest['interactionType'];

export interface InteractionOptions {
  /** When it happened. @defaultValue now */
  at?: Date | number;
  /** e.g. which button. */
  actionName?: string;
}

export interface ClientOptions {
  /** The service's address, e.g. `https://tds.example.com`. */
  baseUrl: string;
  projectId: string;
  /** A key with the DELIVERY and LOG_EVENTS permissions, or set the two below. */
  apiKey?: string;
  /** DELIVERY key: getTreatments, getTreatment and interactions. @defaultValue apiKey */
  deliveryKey?: string;
  /** LOG_EVENTS key: track and logEvents. @defaultValue apiKey */
  eventsKey?: string;
  /** How long getTreatments waits for the service. @defaultValue 300 */
  timeoutMs?: number;
  /** The answer when the service times out or is unavailable (else getTreatments throws). */
  fallback?: Fallback;
  /** Events and interactions queued before a send starts. @defaultValue 20 */
  flushAt?: number;
  /** Longest a queued event waits for a send. @defaultValue 1000 */
  flushIntervalMs?: number;
  /** Items kept while the service does not accept them; beyond it the oldest are dropped. @defaultValue 10000 */
  maxQueueSize?: number;
  /** Events per LogEvents request (the service takes 1,000). @defaultValue 500 */
  maxBatchEvents?: number;
  /** Bytes per LogEvents request (the service takes 1 MiB). @defaultValue 512000 */
  maxBatchBytes?: number;
  /** Requests sent at once. @defaultValue 4 */
  maxConcurrentRequests?: number;
  /** Timeout of a LogEvents or LogTreatmentInteraction request. @defaultValue 10000 */
  requestTimeoutMs?: number;
  /** Waits between retries (a longer `Retry-After` wins). @defaultValue { initialDelayMs: 500, maxDelayMs: 30000 } */
  backoff?: BackoffOptions;
  /** Attempts of a send that keeps failing with a 5xx other than 503. @defaultValue 5 */
  maxAttempts?: number;
  /** In a browser, send what is queued with `fetch` keepalive when the page is hidden or left. @defaultValue true */
  flushOnPageHide?: boolean;
  /** Told of events and interactions refused, given up or dropped. @defaultValue a console warning */
  onError?: (error: Error, lost: number) => void;
  /** The `fetch` to use. @defaultValue globalThis.fetch */
  fetch?: FetchLike;
}

const positive = (name: string, v: number | undefined, dflt: number, max = Number.MAX_SAFE_INTEGER): number => {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max)
    throw new TypeError(`${name} must be a positive number${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}, got ${String(v)}`);
  return v;
};

function requireKey(name: string, key: string | undefined): string {
  if (typeof key !== 'string' || key === '')
    throw new TypeError(`${name} needs a key: set apiKey or ${name === 'track' || name === 'logEvents' ? 'eventsKey (LOG_EVENTS)' : 'deliveryKey (DELIVERY)'}`);
  return key;
}

/**
 * The service's client for apps, pages and servers: GetTreatments with a timeout and a
 * fallback, events and interactions queued and sent in batches with retries. One per project.
 */
export class TdsClient {
  readonly projectId: string;
  private readonly transport: Transport;
  private readonly deliveryKey?: string;
  private readonly eventsKey?: string;
  private readonly timeoutMs: number;
  private readonly fallback?: Fallback;
  private readonly queue: EventQueue;
  private readonly removePageHooks: () => void;

  constructor(o: ClientOptions) {
    if (typeof o?.projectId !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(o.projectId))
      throw new TypeError(`projectId must be 1-64 letters, digits, _ or -, got ${String(o?.projectId)}`);
    this.projectId = o.projectId;
    this.transport = { baseUrl: normaliseBaseUrl(o.baseUrl), fetch: o.fetch ?? defaultFetch() };
    this.deliveryKey = o.deliveryKey ?? o.apiKey;
    this.eventsKey = o.eventsKey ?? o.apiKey;
    this.timeoutMs = positive('timeoutMs', o.timeoutMs, 300);
    this.fallback = o.fallback;
    const requestTimeoutMs = positive('requestTimeoutMs', o.requestTimeoutMs, 10_000);
    const onError = o.onError ?? ((error: Error, lost: number) => console.warn(`[tds-client] ${lost} lost: ${error.message}`));
    this.queue = new EventQueue({
      projectId: o.projectId,
      flushAt: positive('flushAt', o.flushAt, 20),
      flushIntervalMs: positive('flushIntervalMs', o.flushIntervalMs, 1000),
      maxQueueSize: positive('maxQueueSize', o.maxQueueSize, 10_000),
      maxBatchEvents: positive('maxBatchEvents', o.maxBatchEvents, 500, 1000),
      maxBatchBytes: positive('maxBatchBytes', o.maxBatchBytes, 512_000, 1_000_000),
      maxConcurrentRequests: positive('maxConcurrentRequests', o.maxConcurrentRequests, 4, 64),
      maxAttempts: positive('maxAttempts', o.maxAttempts, 5),
      backoff: {
        initialDelayMs: positive('backoff.initialDelayMs', o.backoff?.initialDelayMs, 500),
        maxDelayMs: positive('backoff.maxDelayMs', o.backoff?.maxDelayMs, 30_000),
      },
      send: (batch, keepalive) => {
        const key = batch.operation === 'LogEvents' ? this.eventsKey : this.deliveryKey;
        return postJson(this.transport, batch.operation, key ?? '', batch.body, { timeoutMs: requestTimeoutMs, keepalive }).then(() => undefined);
      },
      onError,
    });
    this.removePageHooks = o.flushOnPageHide === false ? () => undefined : installPageExitFlush(() => this.queue.flushForPageExit());
  }

  /**
   * The user's treatments per surface. When the service does not answer within `timeoutMs`, is
   * unavailable (no answer, 429, 5xx) and a fallback is set, the fallback answers (`fallback:
   * true`); a request the service refuses (400, 401, 403) always throws its TdsError.
   */
  async getTreatments(
    request: WithProject<GetTreatmentsRequest>,
    o: { timeoutMs?: number; fallback?: Fallback; signal?: AbortSignal } = {},
  ): Promise<TreatmentsAnswer> {
    const body: GetTreatmentsRequest = { ...request, projectId: request.projectId ?? this.projectId };
    const key = requireKey('getTreatments', this.deliveryKey);
    let answer: GetTreatmentsResponse;
    try {
      answer = await postJson<GetTreatmentsResponse>(this.transport, 'GetTreatments', key, JSON.stringify(body), {
        timeoutMs: o.timeoutMs ?? this.timeoutMs,
        signal: o.signal,
      });
    } catch (err) {
      const fallback = o.fallback ?? this.fallback;
      if (!(err instanceof TdsError) || !err.unavailable || fallback === undefined) throw err;
      return fallbackAnswer(fallback, body, err);
    }
    const userTreatments = answer.userTreatments ?? [];
    const out: Treatment[] = new Array(userTreatments.length);
    for (let i = 0; i < userTreatments.length; i++) out[i] = { ...userTreatments[i], userId: body.userId };
    return { responseId: answer.responseId, userTreatments: out, fallback: false };
  }

  /** One treatment as a DELIVERY key may read it. */
  getTreatment(request: WithProject<GetTreatmentRequest>, o: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<GetTreatmentResponse> {
    const body = { ...request, projectId: request.projectId ?? this.projectId };
    return postJson(this.transport, 'GetTreatment', requireKey('getTreatment', this.deliveryKey), JSON.stringify(body), {
      timeoutMs: o.timeoutMs ?? this.timeoutMs * 10,
      signal: o.signal,
    });
  }

  /** Queues one event (sent in a batch); returns its insertId, given once here and kept by every retry. */
  track(event: TrackEvent): string {
    requireKey('track', this.eventsKey);
    const wire = toWireEvent(event);
    this.queue.push('event', event.userId, JSON.stringify(wire));
    return wire.insertId!;
  }

  /** Queues the events of a LogEvents request (typed as the service takes it); returns their insertIds. */
  logEvents(request: WithProject<LogEventsRequest>): string[] {
    requireKey('logEvents', this.eventsKey);
    if (request.projectId !== undefined && request.projectId !== this.projectId)
      throw new TypeError(`logEvents: projectId ${request.projectId} is not this client's (${this.projectId})`);
    if (!Array.isArray(request.events)) throw new TypeError('logEvents: events must be an array');
    const wires = request.events.map((e) => toWireEvent({ ...e, userId: request.userId, timestamp: e.clientEventTimestamp }));
    for (const w of wires) this.queue.push('event', request.userId, JSON.stringify(w));
    return wires.map((w) => w.insertId!);
  }

  viewed(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'VIEWED', o);
  }

  clicked(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'CLICKED', o);
  }

  dismissed(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'DISMISSED', o);
  }

  snoozed(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'SNOOZED', o);
  }

  ctaCompleted(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'CTA_COMPLETED', o);
  }

  swiped(t: Treatment, o?: InteractionOptions): boolean {
    return this.interaction(t, 'SWIPE', o);
  }

  /**
   * Queues a LogTreatmentInteraction for a treatment GetTreatments returned (its tracking id, user
   * and surface). False for a fallback treatment, which has no tracking id: nothing is sent.
   */
  interaction(t: Treatment, type: InteractionType, o: InteractionOptions = {}): boolean {
    requireKey('interaction', this.deliveryKey);
    if (typeof t?.treatmentTrackingId !== 'string') throw new TypeError('interaction: pass a treatment returned by getTreatments');
    if (t.treatmentTrackingId === '') return false;
    const ms = o.at === undefined ? Date.now() : typeof o.at === 'number' ? o.at : o.at.getTime();
    if (!Number.isFinite(ms)) throw new TypeError(`interaction: at is not a valid time: ${String(o.at)}`);
    const body: LogTreatmentInteractionRequest = {
      projectId: this.projectId,
      ...(t.userId ? { userId: t.userId } : {}),
      treatmentTrackingId: t.treatmentTrackingId,
      treatmentId: t.treatmentId,
      surface: t.surface,
      interactionType: type,
      interactionTimeMicros: `${Math.floor(ms)}000`,
      ...(o.actionName !== undefined ? { actionName: o.actionName } : {}),
    };
    this.queue.push('interaction', t.userId ?? '', JSON.stringify(body));
    return true;
  }

  /** Sends what is queued now; resolves when the queue is empty or a retry waits for its backoff. */
  flush(): Promise<void> {
    return this.queue.flush();
  }

  /** What was queued, sent, retried, refused and dropped. */
  stats(): QueueStats {
    return this.queue.counters;
  }

  /**
   * Sends everything queued, retrying for up to `timeoutMs`, then stops: call it before a Node
   * process exits (its timers never keep a process alive). Idempotent.
   */
  async close(timeoutMs = 5000): Promise<QueueStats> {
    this.removePageHooks();
    return this.queue.close(timeoutMs);
  }
}

function fallbackAnswer(fallback: Fallback, request: GetTreatmentsRequest, error: TdsError): TreatmentsAnswer {
  const given = typeof fallback === 'function' ? fallback(request, error) : fallback;
  const userTreatments = (given?.userTreatments ?? []).map((t, i): Treatment => ({
    treatmentType: '',
    treatmentContent: '{}',
    contentLanguageCode: '',
    rank: String(i + 1),
    ...t,
    treatmentTrackingId: '',
    userId: request.userId,
  }));
  return { responseId: 'fallback', userTreatments, fallback: true, error };
}

/** A treatment's content (`treatmentContent` is JSON text): field name → value. */
export function contentOf(t: Pick<UserTreatment, 'treatmentContent'>): Record<string, unknown> {
  return JSON.parse(t.treatmentContent) as Record<string, unknown>;
}
