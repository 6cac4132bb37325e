import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '../../shared/platform/config.js';
import { errorBody, PermissionDeniedError } from '../../shared/platform/errors.js';
import type { Permission } from '../../shared/projects/index.js';

/**
 * Browser access to the operations a client key may call (GetTreatments, GetTreatment, LogEvents,
 * LogTreatmentInteraction: the ones a DELIVERY or LOG_EVENTS key admits), for the origins of
 * `CORS_ORIGINS`. Every other operation, management and admin alike, never answers cross-origin:
 * it has no preflight route (404) and its answers carry no `Access-Control-Allow-Origin`.
 *
 * The request path pays one header lookup (`Origin`, absent on server-to-server calls) and, for
 * a browser's call, one Set lookup and three headers.
 */
const CLIENT_KEY_PERMISSIONS: ReadonlySet<Permission> = new Set<Permission>(['DELIVERY', 'LOG_EVENTS']);

export const CORS_ALLOWED_HEADERS = 'content-type, x-api-key, x-request-id';
/** Read by the client: `Retry-After` of a 429 or 503, and the request id for support. */
export const CORS_EXPOSED_HEADERS = 'retry-after, x-request-id';
/** Seconds a browser may reuse a preflight answer (a changed CORS_ORIGINS applies within it). */
export const CORS_MAX_AGE_SECONDS = 600;

export interface CorsPolicy {
  /** The `Access-Control-Allow-Origin` value for a request from `origin`, or undefined: not allowed. */
  allowOrigin(origin: string): string | undefined;
  /** Adds the CORS headers of an actual (non-preflight) request to its answer, whatever the answer. */
  onRequest(origin: string | undefined, reply: FastifyReply): void;
}

/** Whether an operation is one a client key may call, and so answers cross-origin. */
export function isClientKeyOperation(permissions: readonly Permission[]): boolean {
  return permissions.some((p) => CLIENT_KEY_PERMISSIONS.has(p));
}

/** The policy of `CORS_ORIGINS`, or undefined when it is unset (no cross-origin access). */
export function corsPolicy(origins: Config['corsOrigins']): CorsPolicy | undefined {
  if (origins === undefined) return undefined;
  const any = origins === '*';
  const allowed: ReadonlySet<string> = new Set(any ? [] : origins);
  const allowOrigin = (origin: string): string | undefined => (any ? '*' : allowed.has(origin) ? origin : undefined);
  return {
    allowOrigin,
    onRequest(origin, reply) {
      if (origin === undefined) return;
      const value = allowOrigin(origin);
      if (value === undefined) return;
      void reply.header('access-control-allow-origin', value).header('access-control-expose-headers', CORS_EXPOSED_HEADERS);
      if (!any) void reply.header('vary', 'origin');
    },
  };
}

/**
 * The preflight (`OPTIONS`) of one operation: 204 with the allowed origin, `POST` and the request
 * headers a client sends; 403 for an origin that is not allowed or a method other than POST.
 */
export function registerPreflight(app: FastifyInstance, url: string, cors: CorsPolicy): void {
  app.options(url, { schema: { hide: true } }, (req, reply) => {
    const origin = req.headers.origin;
    const value = origin === undefined ? undefined : cors.allowOrigin(origin);
    if (value === undefined) {
      return reply
        .code(403)
        .send(
          errorBody(
            new PermissionDeniedError(
              origin === undefined ? 'a preflight request needs an Origin header' : `origin ${origin} is not allowed to call this operation (CORS_ORIGINS)`,
            ),
          ),
        );
    }
    const method = req.headers['access-control-request-method'];
    if (method !== undefined && method !== 'POST') {
      return reply.code(403).send(errorBody(new PermissionDeniedError(`${url} answers POST only`)));
    }
    if (value !== '*') void reply.header('vary', 'origin');
    return reply
      .code(204)
      .header('access-control-allow-origin', value)
      .header('access-control-allow-methods', 'POST')
      .header('access-control-allow-headers', CORS_ALLOWED_HEADERS)
      .header('access-control-max-age', String(CORS_MAX_AGE_SECONDS))
      .send();
  });
}
