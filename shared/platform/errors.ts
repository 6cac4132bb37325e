/**
 * The one error hierarchy. Each class carries an HTTP status and the canonical code
 * (INVALID_ARGUMENT, NOT_FOUND, ...); the Fastify error handler maps them to the error body in one place.
 */
export interface ErrorDetail {
  field: string;
  description: string;
}

export type CanonicalCode =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL'
  | 'UNAVAILABLE';

export class ApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: CanonicalCode,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export class InvalidArgumentError extends ApiError {
  constructor(message: string, details: ErrorDetail[] = []) {
    super(400, 'INVALID_ARGUMENT', message, details);
  }
}

/** Convenience for the common single-field case. */
export function invalidField(field: string, description: string): InvalidArgumentError {
  return new InvalidArgumentError(`${field}: ${description}`, [{ field, description }]);
}

export class FailedPreconditionError extends ApiError {
  constructor(message: string, details: ErrorDetail[] = []) {
    super(400, 'FAILED_PRECONDITION', message, details);
  }
}

export class UnauthenticatedError extends ApiError {
  constructor(message = 'missing, invalid or revoked API key') {
    super(401, 'UNAUTHENTICATED', message);
  }
}

export class PermissionDeniedError extends ApiError {
  constructor(message: string) {
    super(403, 'PERMISSION_DENIED', message);
  }
}

export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, 'NOT_FOUND', message);
  }
}

export class AlreadyExistsError extends ApiError {
  constructor(message: string) {
    super(409, 'ALREADY_EXISTS', message);
  }
}

/** A concurrent writer kept winning; the client may retry the same request. */
export class AbortedError extends ApiError {
  constructor(message: string) {
    super(409, 'ABORTED', message);
  }
}

/** A dependency (Redis, ClickHouse) is down; safe to retry. */
/** 503: a dependency is unreachable; `dependency` names it (redis, pubsub, workers) for the logs and /metrics. */
export class UnavailableError extends ApiError {
  constructor(
    message: string,
    readonly dependency?: 'redis' | 'pubsub' | 'workers',
  ) {
    super(503, 'UNAVAILABLE', message);
  }
}

/**
 * A limit was reached (rate limit, ingestion backlog): 429 with `Retry-After`, in whole
 * seconds (at least 1), after which the same request is likely to be admitted.
 */
export class ResourceExhaustedError extends ApiError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterMs: number) {
    super(429, 'RESOURCE_EXHAUSTED', message);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  }
}

export function errorBody(err: ApiError): { error: { code: number; status: string; message: string; details: ErrorDetail[] } } {
  return { error: { code: err.httpStatus, status: err.code, message: err.message, details: err.details } };
}
