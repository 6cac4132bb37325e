import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ApiServices } from './compose-api.js';
import { camelizeKeys, schemaFieldNames } from '../shared/platform/http/camelize.js';
import { bodyShapeError, jsonTextShapeError, MAX_BODY_DEPTH, MAX_KEY_LENGTH, type JsonTextShape } from '../shared/platform/http/body-shape.js';
import { trustProxyOption } from '../shared/platform/limits/client-address.js';
import { registerErrorHandler } from './http/error-handler.js';
import { undecodedEncodingError } from './http/gzip-body.js';
import { registerOperation, type Listener } from './http/v1-operation.js';
import { v1Operations } from './v1.routes.js';
import { adminOperations, registerAdminRoutes } from './admin.routes.js';
import { registerHealthRoutes } from './http/health.route.js';
import { registerConsoleRoutes } from './console/console.route.js';
import { pageSecurityHeaders } from './http/security-headers.js';
import { lazyRequestLogger } from './http/request-logger.js';

export const BODY_LIMIT = 1024 * 1024;

export interface BuildAppOptions {
  listener: Listener;
  /** Hooks for other areas (dashboard, metrics) registered by the composition root. */
  extraPlugins?: ((app: FastifyInstance) => Promise<void> | void)[];
}

/**
 * The HTTP app as a function of its dependencies: plugins → routes → error handler. The base
 * listener serves everything; the alternate one only the delivery operations.
 */
export async function buildApp(ctx: ApiServices, opts: BuildAppOptions): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: ctx.log.child({ listener: opts.listener }) as FastifyBaseLogger,
    // overload is refused before Fastify sees the request (api/http/load-shedder.ts)
    serverFactory: ctx.overload.serverFactory(),
    // applied by the server factory (api/http/load-shedder.ts): HTTP_KEEP_ALIVE_TIMEOUT_MS
    keepAliveTimeout: ctx.config.httpKeepAliveTimeoutMs,
    bodyLimit: BODY_LIMIT,
    // TRUST_PROXY: `req.ip`, which the per-address limits count, is then the client's address
    // from X-Forwarded-For as far as trusted proxies set it; off, the connection's address.
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(given) ? given : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: true } },
    // The error handler words the 400 from `err.validation` (at most 100 problems); Fastify's own
    // formatter would first join every error into one message (tens of ms for 40,000 errors).
    schemaErrorFormatter: () => new Error('request validation failed'),
  });
  registerErrorHandler(app, ctx);
  const knownFields = schemaFieldNames([...v1Operations.map((op) => op.body), ...adminOperations.map((op) => op.body)]);

  // A body nested deeper than MAX_BODY_DEPTH is refused before JSON.parse spends ~100 ms
  // on 1 MiB of brackets; otherwise Fastify's own parser (prototype-poisoning checks included).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Bodies whose text the scan found within every limit, keys included: the walk after parsing
  // (which also checks bodies that did not come through this parser) has nothing left to find.
  const shapeChecked = new WeakSet<object>();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // an encoded body is inflated before this only where it is accepted (LogEvents, interactions)
    const encodingError = undecodedEncodingError(req);
    if (encodingError !== undefined) return done(encodingError, undefined);
    const seen: JsonTextShape = { longestKey: 0 };
    const shapeError = jsonTextShapeError(body as string, MAX_BODY_DEPTH, seen);
    if (shapeError !== undefined) return done(shapeError, undefined);
    parseJson(req, body as string, (err, parsed) => {
      if (err === null && seen.longestKey <= MAX_KEY_LENGTH && parsed !== null && typeof parsed === 'object') shapeChecked.add(parsed);
      done(err, parsed);
    });
  });

  // Synchronous hooks take a callback: every request passes them, and a callback costs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-request-id', req.id);
    done();
  });
  // snake_case accepted on input; rewritten before authentication and validation, once the
  // body's depth and key lengths are known to be bounded (nothing recursive sees it before).
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.body && typeof req.body === 'object') {
      const shapeError = shapeChecked.has(req.body) ? undefined : bodyShapeError(req.body);
      if (shapeError !== undefined) return done(shapeError);
      try {
        const url = req.routeOptions.url ?? '';
        req.body = camelizeKeys(req.body, url.startsWith('/v1/') || url.startsWith('/admin/v1/') ? knownFields : undefined);
      } catch (err) {
        return done(err as Error);
      }
    }
    done();
  });
  // Access log: successes, 429s and the 503s of a Redis outage at debug (delivery and ingestion
  // run thousands per second, a flood over a limit or an outage as many; metrics count them, and
  // the outage is logged once), everything else at info.
  app.addHook('onResponse', (req, reply, done) => {
    const status = reply.statusCode;
    const level = status < 400 || status === 429 || (status === 503 && ctx.redisHealth.isDown) ? 'debug' : 'info';
    if (level === 'info' || (req.log as FastifyBaseLogger & { isLevelEnabled(l: string): boolean }).isLevelEnabled('debug')) {
      req.log[level](
        { method: req.method, url: req.routeOptions.url ?? req.url.split('?')[0], statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 },
        'request completed',
      );
    }
    done();
  });

  if (opts.listener === 'base') {
    await app.register(swagger, {
      openapi: {
        info: {
          title: 'Treatment Delivery Service',
          version: '1.0.0',
          description: 'Delivery, ingestion and management API. Every operation is POST with a JSON body.',
        },
        components: {
          securitySchemes: {
            apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
            adminToken: { type: 'http', scheme: 'bearer' },
          },
        },
      },
    });
    // A scope of its own, so the headers reach every route of the UI, its static files included.
    await app.register(async (scope) => {
      scope.addHook('onRequest', pageSecurityHeaders);
      await scope.register(swaggerUi, { routePrefix: '/docs' });
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  }

  registerHealthRoutes(app, ctx);
  for (const op of v1Operations) registerOperation(app, ctx, op, opts.listener);
  if (opts.listener === 'base') await registerAdminRoutes(app, ctx);
  if (opts.listener === 'base') registerConsoleRoutes(app);
  for (const plugin of opts.extraPlugins ?? []) await plugin(app);
  await app.ready();
  return app;
}
