import type { EventAttributes, PropertyValue } from './types.js';

/** Job payloads of the ingestion queues: plain JSON, timestamps as epoch milliseconds, int64 as decimal strings. */

/** One user event as the workers store it (normalised by the API or the Pub/Sub intake). */
export interface EventPayload extends EventAttributes {
  eventName: string;
  clientEventTs: number;
  serverReceivedTs?: number;
}

/**
 * A batch of events of one user. `origin` decides the de-duplication key of events without an
 * insertId: `j:<jobId>:<index>` for API calls, `m:<messageId>:<index>` for Pub/Sub messages,
 * so a retried job or a redelivered message never counts twice.
 */
export interface EventsJob {
  kind: 'events';
  projectId: string;
  userId: string;
  events: EventPayload[];
  origin: { source: 'api' } | { source: 'pubsub'; messageId: string };
  receivedAt: number;
}

/** Profile attributes from a Pub/Sub UserAttribute message (last-write-wins by updateTs). */
export interface UserAttributesJob {
  kind: 'userAttributes';
  projectId: string;
  userId: string;
  userProperties: Record<string, PropertyValue>;
  updateTs: number;
  messageId: string;
  receivedAt: number;
}

/**
 * The LogEvents requests that arrived in one event-loop turn, merged into one job: one BullMQ
 * add, fetch and completion for many requests instead of one each (the queue's Redis cost is per
 * job). Each request keeps its own identity `<jobId>.<index>`: its exactly-once marker and the
 * de-duplication keys of its events without insertId, exactly as if it were a job of that id.
 */
export interface EventsBatchJob {
  kind: 'eventsBatch';
  requests: EventsJob[];
}

/**
 * Events per merged LogEvents job at most, by default (`MERGED_JOB_EVENTS`; a larger request is a
 * job of its own): requests share a job's queue overhead, its add, fetch and completion, which
 * cost Redis and the workers the same whatever the job's size. A request is answered only once
 * its job is added, so a job does not wait to be full: see MERGED_JOB_MIN_EVENTS (the producers').
 * config.mergedJobEvents defaults to the same number.
 */
export const MERGED_JOB_EVENTS = 500;

/** A job of one request or message. */
export type SingleEventsJob = EventsJob | UserAttributesJob;
export type EventsQueueJob = SingleEventsJob | EventsBatchJob;

export interface InteractionJob {
  kind: 'interaction';
  projectId: string;
  /** Absent when the client omitted it; the worker resolves it from the decision log. */
  userId: string;
  treatmentId: string;
  treatmentTrackingId: string;
  /** Absent when the client omitted it; the worker resolves it from the decision log. */
  surface: string;
  /**
   * The fields the worker must read from the decision log (by the tracking id's response
   * id) before storing; a given userId/surface must then agree with the decision.
   */
  resolve?: true;
  interactionType: string;
  /** int64 microseconds as a decimal string */
  interactionTimeMicros: string;
  actionName?: string;
  receivedAt: number;
}

/**
 * The LogTreatmentInteraction calls that arrived within a few milliseconds, merged into one job
 * as LogEvents merges requests: one BullMQ add, fetch and completion for many interactions. Each
 * keeps its own identity `<jobId>.<index>`: its profile and ranking markers, its row's
 * de-duplication key, its wait for its decision and its dead letter, exactly as if it were a job
 * of that id.
 */
export interface InteractionsBatchJob {
  kind: 'interactionsBatch';
  interactions: InteractionJob[];
}

export type InteractionsQueueJob = InteractionJob | InteractionsBatchJob;
