/**
 * The Treatment Delivery Service client for apps, pages and servers (Node.js 20+, browsers):
 * GetTreatments with a timeout and a fallback, events and interactions batched and retried. The
 * management operations are in `@tds/client/management`; every wire type in `./wire.generated`.
 */
export { TdsClient, contentOf } from './client.js';
export type {
  ClientOptions,
  Fallback,
  FallbackTreatment,
  InteractionOptions,
  InteractionType,
  Treatment,
  TreatmentsAnswer,
  UserTreatment,
  WithProject,
} from './client.js';
export type { TrackEvent, PropertyInput, PropertyValue, WireEvent } from './events.js';
export type { QueueStats } from './event-queue.js';
export type { BackoffOptions } from './backoff.js';
export type { FetchLike } from './http.js';
export { TdsError } from './errors.js';
export type { ErrorDetail, TdsErrorKind } from './errors.js';
export type * from './wire.generated.js';
