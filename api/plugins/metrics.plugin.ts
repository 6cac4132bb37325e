import type { FastifyInstance } from 'fastify';
import { openQueueHandles } from '../../shared/metrics.js';
import type { ServiceContext } from '../../shared/service-context.js';

/** Requests that matched no route share one label, so scanners cannot blow up the label set. */
export const UNMATCHED_OPERATION = 'unmatched';

/** Request counters and latencies for every route of the app (both listeners feed one registry). */
export function requestMetricsPlugin(ctx: ServiceContext): (app: FastifyInstance) => void {
  return (app) => {
    app.addHook('onResponse', (req, reply, done) => {
      ctx.metrics.observeRequest(req.routeOptions.url ?? UNMATCHED_OPERATION, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  };
}

/**
 * `requestMetricsPlugin` plus `GET /metrics`, which also reads the depth of every queue.
 *
 * `/metrics` is open (no admin token): Prometheus scrapers rarely send credentials, and the
 * figures hold no tenant data beyond project ids. It is registered on the main listener only,
 * never on the alternate listener, which serves only the two delivery operations (D10); deployments that expose
 * the main listener publicly should block `/metrics` at the ingress.
 */
export function metricsPlugin(ctx: ServiceContext): (app: FastifyInstance) => void {
  return (app) => {
    const queues = openQueueHandles(ctx.redis, ctx.config.redisPrefix);
    const unwatch = ctx.metrics.watchQueues(queues);
    app.addHook('onClose', async () => {
      unwatch();
      await Promise.all(queues.map((q) => q.close()));
    });

    requestMetricsPlugin(ctx)(app);
    app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
      const text = await ctx.metrics.render();
      return reply.type(ctx.metrics.contentType).send(text);
    });
  };
}
