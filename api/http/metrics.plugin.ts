import type { FastifyInstance } from 'fastify';
import type { ApiServices } from '../compose-api.js';

/** Requests that matched no route share one label, so scanners cannot blow up the label set. */
export const UNMATCHED_OPERATION = 'unmatched';

/**
 * Request counters and latencies for every route of the app (both listeners feed one registry).
 * The figures are served on the ops listener (`OPS_PORT`, shared/platform/ops-server.ts), never
 * on the public listeners.
 */
export function requestMetricsPlugin(ctx: Pick<ApiServices, 'metrics'>): (app: FastifyInstance) => void {
  return (app) => {
    app.addHook('onResponse', (req, reply, done) => {
      ctx.metrics.observeRequest(req.routeOptions.url ?? UNMATCHED_OPERATION, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  };
}

/** The main listener's request metrics (the same hook; kept as its own name for the composition root). */
export const metricsPlugin = requestMetricsPlugin;
