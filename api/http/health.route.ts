import type { FastifyInstance } from 'fastify';
import { errorBody, UnavailableError } from '../../shared/platform/errors.js';
import type { ApiServices } from '../compose-api.js';

/**
 * The public listener's probes, kept for load balancers. The full readiness of a process (its
 * ClickHouse and queue consumers too) and its metrics are on the ops listener (shared/platform/ops-server.ts).
 */
export function registerHealthRoutes(app: FastifyInstance, ctx: Pick<ApiServices, 'lifecycle' | 'redis'>): void {
  /** Process alive. */
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  /** 200 only when Redis answers and the service takes traffic; 503 while starting or stopping. */
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    if (!ctx.lifecycle.ready) return reply.code(503).send(errorBody(new UnavailableError('not ready: starting or shutting down')));
    try {
      await ctx.redis.ping();
    } catch {
      return reply.code(503).send(errorBody(new UnavailableError('not ready: Redis does not answer')));
    }
    return { status: 'ready' };
  });
}
