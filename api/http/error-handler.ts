import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError, errorBody, ResourceExhaustedError, UnavailableError } from '../../shared/platform/errors.js';
import { scrubString } from '../../shared/platform/logger.js';
import type { Platform } from '../../shared/platform/platform.js';
import { isRedisConnectionError } from '../../shared/platform/redis/redis-health.js';
import { detailsText, validationDetails, type SchemaError } from '../../shared/platform/http/validation-errors.js';

/** The dependency a 503 is owed to: Redis for a connection error or a Redis-backed operation, else what the error names. */
function unavailableDependency(err: unknown): string {
  if (isRedisConnectionError(err)) return 'redis';
  return (err instanceof UnavailableError && err.dependency) || 'other';
}

/**
 * The one error handler: the `{error: {code, status, message, details}}` body; 4xx at warn, 5xx at
 * error; no internals leak. A 503 owed to Redis is logged at debug: the process logs the outage
 * itself once (`redisHealth`), and /metrics counts the 503s.
 */
export function registerErrorHandler(app: FastifyInstance, ctx: Pick<Platform, 'redisHealth' | 'metrics'>): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    let apiErr: ApiError;
    if (err instanceof ApiError) apiErr = err;
    else if (err.validation) {
      const details = validationDetails(err.validation as readonly SchemaError[]);
      apiErr = new ApiError(400, 'INVALID_ARGUMENT', `invalid request: ${detailsText(details)}`, details);
    } else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') apiErr = new ApiError(413, 'INVALID_ARGUMENT', 'request body is too large');
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') apiErr = new ApiError(400, 'INVALID_ARGUMENT', 'Content-Type must be application/json');
    else if (err.statusCode === 400 || err.code?.startsWith('FST_ERR_CTP'))
      apiErr = new ApiError(400, 'INVALID_ARGUMENT', `malformed JSON body: ${err.message}`);
    else if (isRedisConnectionError(err)) apiErr = new ApiError(503, 'UNAVAILABLE', 'a dependency of the service is unavailable; retry the request');
    else if (err.statusCode === 429) apiErr = new ApiError(429, 'RESOURCE_EXHAUSTED', 'too many requests');
    else apiErr = new ApiError(500, 'INTERNAL', 'internal error; retry the request');

    // `err` goes through the logger's error serializer (no command arguments, no secrets); a
    // rejection's message may quote the body (a JSON parse error shows a fragment of it).
    if (apiErr.httpStatus === 503) {
      const dependency = unavailableDependency(err);
      ctx.metrics.countUnavailable(dependency);
      if (dependency === 'redis') {
        ctx.redisHealth.failed(scrubString(err.message));
        ctx.redisHealth.countUnavailable();
        req.log.debug({ status: apiErr.code, errMessage: scrubString(err.message) }, 'request failed: Redis unreachable');
      } else req.log.error({ err }, 'request failed');
    } else if (apiErr.httpStatus >= 500) req.log.error({ err }, 'request failed');
    // A flood over a limit must stay cheap to refuse: its 429s are counted in /metrics, logged at debug.
    else if (apiErr.httpStatus === 429) req.log.debug({ status: apiErr.code, errMessage: scrubString(apiErr.message) }, 'request rejected');
    else req.log.warn({ status: apiErr.code, errMessage: scrubString(apiErr.message) }, 'request rejected');
    if (apiErr.httpStatus === 503) void reply.header('retry-after', '1');
    else if (apiErr.httpStatus === 429) void reply.header('retry-after', String(apiErr instanceof ResourceExhaustedError ? apiErr.retryAfterSeconds : 1));
    void reply.code(apiErr.httpStatus).send(errorBody(apiErr));
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send(errorBody(new ApiError(404, 'NOT_FOUND', `no operation at ${req.method} ${req.url.split('?')[0]}`)));
  });
}
