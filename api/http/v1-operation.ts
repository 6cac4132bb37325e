import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema, Static } from 'typebox';
import type { ApiKeyRecord, Permission } from '../../shared/projects/index.js';
import type { AuthContext } from '../../shared/projects/index.js';
import { UnauthenticatedError } from '../../shared/platform/errors.js';
import type { ApiServices } from '../compose-api.js';
import { ErrorResponse } from '../../shared/platform/http/common.schemas.js';
import type { AdminOperation } from './admin-operation.js';
import { corsPolicy, isClientKeyOperation, registerPreflight } from './cors.js';
import { gzipBodies } from './gzip-body.js';

export type Listener = 'base' | 'alt';

/**
 * One `/v1` operation: schema, permission and handler in one declaration. `D` is what its handler
 * is given: the deps its module declares, a part of the API's services.
 */
export interface V1Operation<B extends TSchema = TSchema, R extends TSchema = TSchema, D = ApiServices> {
  operation: string;
  summary: string;
  /** Any one of these permissions admits the call. */
  permissions: readonly Permission[];
  /** Query-parameter form of the key accepted besides the header. */
  keyParam?: 'api_key' | 'api-key';
  /** Also served on the alternate delivery listener. */
  alt?: boolean;
  /** Accepts `Content-Encoding: gzip` bodies (the body limits apply to the inflated body). */
  gzip?: boolean;
  body: B;
  response: R;
  handler: (body: Static<B>, auth: AuthContext, ctx: D, req: FastifyRequest) => Promise<Static<R>>;
  /**
   * The 200 answer's JSON text, for an operation whose answers the schema's compiled serializer
   * writes slowly (GetTreatments); it must give the same JSON value (a test compares them).
   */
  responseJson?: (response: Static<R>) => string;
}

/**
 * `defineOperation` of a module whose handlers are given `D` and nothing more
 * (`const defineOperation = operationsUsing<ImpactOpsDeps>()`): a handler cannot reach a feature
 * its module does not declare.
 */
export function operationsUsing<D>(): <B extends TSchema, R extends TSchema>(op: V1Operation<B, R, D>) => V1Operation<B, R, D> {
  return (op) => op;
}

/** An operation of any schemas whose deps the API's services provide. */
type AnyV1Operation = Omit<V1Operation, 'handler' | 'responseJson'> & {
  handler: (body: never, auth: AuthContext, ctx: ApiServices, req: FastifyRequest) => Promise<unknown>;
  responseJson?: (response: never) => string;
};
/** An admin operation of any schemas whose deps the API's services provide. */
type AnyAdminOperation = Omit<AdminOperation, 'handler'> & { handler: (body: never, ctx: ApiServices, actor: string) => Promise<unknown> };

/*
 * The one place where the operations' schema generics are erased (a handler typed for its own
 * body cannot be stored as one taking any body). Only the schemas are erased: an operation whose
 * deps ask for something the API's services do not have does not compile here.
 */

/** The registry's list of `/v1` operations. */
export function operationList(...ops: AnyV1Operation[]): V1Operation[] {
  return ops as unknown as V1Operation[];
}

/** The registry's list of admin operations. */
export function adminOperationList(...ops: AnyAdminOperation[]): AdminOperation[] {
  return ops as unknown as AdminOperation[];
}

/**
 * A `/v1` operation for operators and the CLI (`npm run admin -- get-treatment-report --project-id p
 * --treatment-id 1`): the same schema and handler, with the admin token instead of a project key.
 * Only for handlers that read neither the key nor the request.
 */
export function asAdminOperation<B extends TSchema, R extends TSchema, D>(
  op: V1Operation<B, R, D>,
  command: string,
): AdminOperation<B, R, D & Pick<ApiServices, 'projects'>> {
  return {
    operation: op.operation,
    command,
    summary: op.summary,
    body: op.body,
    response: op.response,
    handler: async (body, ctx) => {
      await ctx.projects.projects.require((body as { projectId: string }).projectId);
      return op.handler(body, undefined as unknown as AuthContext, ctx, undefined as never);
    },
  };
}

function presentedKey(req: FastifyRequest, keyParam?: string): string | undefined {
  const header = req.headers['x-api-key'];
  if (typeof header === 'string' && header) return header;
  if (keyParam) {
    const q = (req.query as Record<string, unknown> | undefined)?.[keyParam];
    if (typeof q === 'string' && q) return q;
  }
  return undefined;
}

type AuthedRequest = FastifyRequest & { apiKey: ApiKeyRecord; auth: AuthContext };

export function registerOperation(app: FastifyInstance, ctx: ApiServices, op: V1Operation, listener: Listener): void {
  if (listener === 'alt' && !op.alt) return;
  /** The delivery operations answer only on the project's address; undefined when admitted. */
  const placed = (req: AuthedRequest, auth: AuthContext): Error | undefined => {
    if (op.alt && auth.project.deliveryEndpoint !== (listener === 'alt' ? 'ALT' : 'BASE')) {
      const right = auth.project.deliveryEndpoint === 'ALT' ? 'the alternate delivery address (ALT_PORT)' : 'the base address (PORT)';
      return new UnauthenticatedError(`project "${auth.project.projectId}" is assigned to ${right}; call ${op.operation} there`);
    }
    req.auth = auth;
    return undefined;
  };
  // The operations a client key may call answer browsers of CORS_ORIGINS; no other one does.
  const cors = isClientKeyOperation(op.permissions) ? corsPolicy(ctx.config.corsOrigins) : undefined;
  if (cors !== undefined) registerPreflight(app, `/v1/${op.operation}`, cors);
  app.post(
    `/v1/${op.operation}`,
    {
      schema: {
        operationId: op.operation,
        summary: op.summary,
        tags: ['v1'],
        body: op.body,
        response: { 200: op.response, '4xx': ErrorResponse, '5xx': ErrorResponse },
        security: [{ apiKey: [] }],
      },
      // The key is checked before the body is parsed (a malformed body without a valid key
      // is 401 too), and against the body's projectId before the body is validated.
      // Callback hooks: a call whose key and project are cached (nearly every call) passes both
      // without a promise; the others wait for the stores.
      // A verified key spends a token of its own bucket; anything else first needs its
      // address to be under the failed-authentication limit, so floods of unknown keys are
      // refused before they can cost a Redis read.
      onRequest: (req, reply, done) => {
        // first, so that every answer (a 401 or 429 too) is readable by the allowed page
        if (cors !== undefined) cors.onRequest(req.headers.origin, reply);
        const raw = presentedKey(req, op.keyParam);
        const known = ctx.projects.auth.knownKey(raw);
        if (known !== undefined) {
          (req as AuthedRequest).apiKey = known;
          return done(ctx.limits.keyRequest(known));
        }
        const blocked = ctx.limits.authenticationAttempt(req.ip);
        if (blocked) return done(blocked);
        ctx.projects.auth.verifyKey(raw).then(
          (key) => {
            ctx.limits.authenticationSucceeded(req.ip);
            (req as AuthedRequest).apiKey = key;
            done(ctx.limits.keyRequest(key));
          },
          (err: unknown) => {
            if (!(err instanceof UnauthenticatedError)) ctx.limits.authenticationSucceeded(req.ip);
            done(err as Error);
          },
        );
      },
      preValidation: (req, _reply, done) => {
        const key = (req as AuthedRequest).apiKey;
        const projectId = (req.body as Record<string, unknown> | undefined)?.projectId;
        const admitted = ctx.projects.auth.admitted(key, projectId, op.permissions);
        if (admitted !== undefined) return done(placed(req as AuthedRequest, admitted));
        ctx.projects.auth.authorize(key, projectId, op.permissions).then((auth) => done(placed(req as AuthedRequest, auth)), done);
      },
      ...(op.gzip ? { preParsing: gzipBodies() } : {}),
    },
    op.responseJson === undefined
      ? async (req) => op.handler(req.body as never, (req as AuthedRequest).auth, ctx, req)
      : async (req, reply) => {
          const response = await op.handler(req.body as never, (req as AuthedRequest).auth, ctx, req);
          // set only once the handler has answered: an error's answer keeps the error schema's serializer
          reply.serializer(op.responseJson!);
          return response;
        },
  );
}
