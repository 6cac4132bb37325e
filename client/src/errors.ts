import type { ErrorBody } from './wire.generated.js';

/**
 * Why a call failed:
 * - `timeout`: no answer within the call's timeout (the request was abandoned);
 * - `network`: no HTTP answer at all (refused, reset, DNS, or a browser's CORS refusal);
 * - `http`: the service answered an error (`status`, and its `code` and `details`);
 * - `aborted`: the caller's own AbortSignal fired.
 */
export type TdsErrorKind = 'timeout' | 'network' | 'http' | 'aborted';

export type ErrorDetail = ErrorBody['error']['details'][number];

/** Every failure of the client: one class, told apart by `kind` and `status`. */
export class TdsError extends Error {
  override readonly name = 'TdsError';
  /** The operation called, e.g. `GetTreatments`. */
  readonly operation: string;
  readonly kind: TdsErrorKind;
  /** HTTP status of an `http` error. */
  readonly status?: number;
  /** The service's canonical code (`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, ...). */
  readonly code?: string;
  /** The service's per-field problems (`field` is a JSON path such as `events[3].eventName`). */
  readonly details: readonly ErrorDetail[];
  /** What the service's `Retry-After` asked for, in milliseconds. */
  readonly retryAfterMs?: number;

  constructor(o: {
    operation: string;
    kind: TdsErrorKind;
    message: string;
    status?: number;
    code?: string;
    details?: readonly ErrorDetail[];
    retryAfterMs?: number;
    cause?: unknown;
  }) {
    super(o.message, o.cause === undefined ? undefined : { cause: o.cause });
    this.operation = o.operation;
    this.kind = o.kind;
    this.status = o.status;
    this.code = o.code;
    this.details = o.details ?? [];
    this.retryAfterMs = o.retryAfterMs;
  }

  /**
   * The service is unavailable rather than the request wrong: a timeout, no answer, 429
   * (over a limit), or any 5xx. A fallback answer stands in for these, and sends are retried.
   */
  get unavailable(): boolean {
    return this.kind === 'timeout' || this.kind === 'network' || (this.kind === 'http' && (this.status === 429 || (this.status ?? 0) >= 500));
  }
}
