import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TSchema, Static } from 'typebox';
import { NotFoundError, UnauthenticatedError } from '../../shared/platform/errors.js';
import type { ApiServices } from '../compose-api.js';
import { ErrorResponse } from '../../shared/platform/http/common.schemas.js';

/**
 * One admin operation. The handler is a plain function of (body, context), so the HTTP route and
 * the CLI (`npm run admin`) run the very same code.
 */
export interface AdminOperation<B extends TSchema = TSchema, R extends TSchema = TSchema, D = ApiServices> {
  operation: string;
  /** kebab-case CLI command, e.g. `create-project` */
  command: string;
  summary: string;
  body: B;
  response: R;
  /** `actor` names who made the change, for the change log. */
  handler: (body: Static<B>, ctx: D, actor: string) => Promise<Static<R>>;
}

/**
 * `defineAdminOperation` of a module whose handlers are given `D` and nothing more
 * (`const defineAdminOperation = adminOperationsUsing<ProjectsAdminDeps>()`).
 */
export function adminOperationsUsing<D>(): <B extends TSchema, R extends TSchema>(op: AdminOperation<B, R, D>) => AdminOperation<B, R, D> {
  return (op) => op;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** 404 when no ADMIN_TOKEN is configured (the admin API does not exist), 401 on a wrong token. */
export function checkAdminToken(configured: string | undefined, header: string | undefined): void {
  if (!configured) throw new NotFoundError('no such operation');
  const m = /^Bearer (.+)$/i.exec(header ?? '');
  if (!m || !timingSafeEqual(digest(m[1]), digest(configured))) throw new UnauthenticatedError('missing or wrong admin token');
}

/**
 * `checkAdminToken` under the failed-authentication limit of the client's address: an
 * address over it gets 429 before the token is compared, and every wrong token counts (a right
 * one gives its reserved attempt back).
 */
export function guardAdminToken(ctx: Pick<ApiServices, 'config' | 'limits'>, ip: string | undefined, header: string | undefined): void {
  if (!ctx.config.adminToken) throw new NotFoundError('no such operation');
  const blocked = ctx.limits.authenticationAttempt(ip);
  if (blocked) throw blocked;
  checkAdminToken(ctx.config.adminToken, header);
  ctx.limits.authenticationSucceeded(ip);
}

export function registerAdminOperation(app: FastifyInstance, ctx: ApiServices, op: AdminOperation): void {
  app.post(
    `/admin/v1/${op.operation}`,
    {
      schema: {
        operationId: `admin.${op.operation}`,
        summary: op.summary,
        tags: ['admin'],
        body: op.body,
        response: { 200: op.response, '4xx': ErrorResponse, '5xx': ErrorResponse },
        security: [{ adminToken: [] }],
      },
      onRequest: async (req) => guardAdminToken(ctx, req.ip, req.headers.authorization),
    },
    async (req) => op.handler(req.body as never, ctx, 'admin-api'),
  );
}
