import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError, errorBody, ResourceExhaustedError, type ErrorDetail } from '../../shared/platform/errors.js';
import { scrubString } from '../../shared/platform/logger.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** `/events/0/eventName` → `events[0].eventName` */
export function jsonPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || '(body)';
}

function describe(e: AjvError): ErrorDetail {
  switch (e.keyword) {
    case 'required':
      return { field: jsonPath(e.instancePath, String(e.params.missingProperty)), description: 'required field is missing' };
    case 'additionalProperties':
      return { field: jsonPath(e.instancePath, String(e.params.additionalProperty)), description: 'unknown field' };
    case 'enum':
      return { field: jsonPath(e.instancePath), description: `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}` };
    default:
      return { field: jsonPath(e.instancePath), description: e.message ?? e.keyword };
  }
}

/** At most this many problems are listed: a body with 30,000 unknown fields must not get a 3 MB answer (D45). */
export const MAX_ERROR_DETAILS = 100;

/** Unions report one error per branch; keep one line per field, preferring the most specific. */
function validationDetails(errors: AjvError[]): ErrorDetail[] {
  const byField = new Map<string, ErrorDetail>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    if (byField.size >= MAX_ERROR_DETAILS) {
      byField.set('(body)', { field: '(body)', description: `${errors.length} problems in all; the first ${MAX_ERROR_DETAILS} fields are listed` });
      break;
    }
    const d = describe(e);
    if (!byField.has(d.field)) byField.set(d.field, d);
  }
  if (byField.size === 0 && errors.length > 0) {
    const d = describe(errors[0]);
    byField.set(d.field, { field: d.field, description: 'value does not match any allowed form' });
  }
  return [...byField.values()];
}

const REDIS_DOWN = /Connection is closed|enableOfflineQueue|Command timed out|ECONNREFUSED|ECONNRESET|Stream isn't writeable|max retries per request|Reached the max retries/i;

export function isDependencyDown(err: unknown): boolean {
  return err instanceof Error && REDIS_DOWN.test(err.message);
}

/** The one error handler (conventions point 7): D4 body; 4xx at warn, 5xx at error; no internals leak. */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    let apiErr: ApiError;
    if (err instanceof ApiError) apiErr = err;
    else if (err.validation) {
      const details = validationDetails(err.validation as unknown as AjvError[]);
      apiErr = new ApiError(400, 'INVALID_ARGUMENT', `invalid request: ${details.map((d) => `${d.field}: ${d.description}`).join('; ')}`, details);
    } else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') apiErr = new ApiError(413, 'INVALID_ARGUMENT', 'request body is too large');
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') apiErr = new ApiError(400, 'INVALID_ARGUMENT', 'Content-Type must be application/json');
    else if (err.statusCode === 400 || err.code?.startsWith('FST_ERR_CTP')) apiErr = new ApiError(400, 'INVALID_ARGUMENT', `malformed JSON body: ${err.message}`);
    else if (isDependencyDown(err)) apiErr = new ApiError(503, 'UNAVAILABLE', 'a dependency of the service is unavailable; retry the request');
    else if (err.statusCode === 429) apiErr = new ApiError(429, 'RESOURCE_EXHAUSTED', 'too many requests');
    else apiErr = new ApiError(500, 'INTERNAL', 'internal error; retry the request');

    // `err` goes through the logger's error serializer (no command arguments, no secrets); a
    // rejection's message may quote the body (a JSON parse error shows a fragment of it).
    if (apiErr.httpStatus >= 500) req.log.error({ err }, 'request failed');
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
