import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { ApiError, errorBody, ResourceExhaustedError } from '../../shared/platform/errors.js';
import { openQueueHandles } from '../../shared/platform/metrics.js';
import type { ApiServices } from '../compose-api.js';
import { guardAdminToken } from './admin-operation.js';
import { pageSecurityHeaders } from './security-headers.js';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * The admin token may come as `Bearer <token>` or, because a browser cannot send a Bearer
 * header to a page it navigates to, as the password of HTTP Basic auth (any user name).
 * Returns the header in the Bearer form `checkAdminToken` reads.
 */
export function bearerFromAuthorization(header: string | undefined): string | undefined {
  const basic = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!basic) return header;
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : `Bearer ${decoded.slice(colon + 1)}`;
}

function guard(ctx: Pick<ApiServices, 'config' | 'limits'>) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      guardAdminToken(ctx, req.ip, bearerFromAuthorization(req.headers.authorization));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // Answered here, not thrown: bull-board installs its own error handler in its scope, which
      // would turn our ApiError into a 500.
      if (err.httpStatus === 401) void reply.header('www-authenticate', 'Basic realm="tds"');
      if (err instanceof ResourceExhaustedError) void reply.header('retry-after', String(err.retryAfterSeconds));
      req.log.warn({ status: err.code }, 'queue dashboard request rejected');
      return reply.code(err.httpStatus).send(errorBody(err));
    }
  };
}

/**
 * bull-board at `/admin/queues` for every queue (failed jobs with their reasons, retry),
 * behind the admin token, never framed by another page. Its Queue handles share the
 * request-path connection, so a Redis outage answers promptly instead of hanging the page.
 */
export function queueDashboardPlugin(ctx: Pick<ApiServices, 'config' | 'limits' | 'redis'>): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    const queues = openQueueHandles(ctx.redis, ctx.config.redisPrefix);
    app.addHook('onClose', async () => {
      await Promise.all(queues.map((q) => q.close()));
    });

    const serverAdapter = new FastifyAdapter();
    serverAdapter.setBasePath(DASHBOARD_PATH);
    createBullBoard({
      queues: queues.map((q) => new BullMQAdapter(q)),
      serverAdapter,
      options: { uiConfig: { boardTitle: 'TDS queues' } },
    });

    // The encapsulated scope keeps the guard off every other route of the app.
    await app.register(async (scope) => {
      scope.addHook('onRequest', pageSecurityHeaders);
      scope.addHook('onRequest', guard(ctx));
      await scope.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
    });
  };
}
