import { Type } from 'typebox';
import { invalidField } from '../../shared/platform/errors.js';
import { ProjectId, Strict, TimestampOut } from '../../shared/platform/http/common.schemas.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';
import type { Project } from '../../shared/projects/index.js';
import { percentageProblem } from '../treatments/treatment-input.js';
import { MAX_RATE_LIMIT } from '../../shared/platform/config.js';

/** What the project and key handlers use: the projects feature and the change log in Redis. */
export type ProjectsAdminDeps = Pick<ApiServices, 'redis' | 'keys' | 'projects'>;
const defineAdminOperation = adminOperationsUsing<ProjectsAdminDeps>();

const DeliveryEndpoint = Type.Union([Type.Literal('BASE'), Type.Literal('ALT')]);
const ProjectOut = Type.Object({
  projectId: Type.String(),
  displayName: Type.String(),
  deliveryEndpoint: DeliveryEndpoint,
  createTime: TimestampOut,
  globalHoldoutPercentage: Type.Number(),
});
/** Users held out of every treatment of the project (0–100, two decimals). */
const GlobalHoldoutIn = Type.Optional(
  Type.Number({ minimum: 0, maximum: 100, description: 'percentage of users who get no treatment (0–100, at most two decimals)' }),
);

function checkHoldout(body: { globalHoldoutPercentage?: number }): void {
  if (body.globalHoldoutPercentage === undefined) return;
  const why = percentageProblem(body.globalHoldoutPercentage);
  if (why !== null) throw invalidField('globalHoldoutPercentage', why);
}

function presentProject(p: Project) {
  return { ...p, globalHoldoutPercentage: p.globalHoldoutPercentage ?? 0 };
}
const PermissionT = Type.Union([Type.Literal('DELIVERY'), Type.Literal('LOG_EVENTS'), Type.Literal('TREATMENT_MANAGEMENT')]);
const ApiKeyOut = Type.Object({
  keyId: Type.String(),
  projectId: Type.String(),
  permissions: Type.Array(PermissionT),
  description: Type.String(),
  createTime: TimestampOut,
  revokeTime: Type.Optional(TimestampOut),
  requestsPerSecond: Type.Optional(Type.Integer({ description: 'this key’s request limit; absent: RATE_LIMIT_PER_KEY' })),
});
/** A key's own limit: requests per second in each API process (burst twice as many). */
const RequestsPerSecondIn = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_RATE_LIMIT,
    description: `requests per second this key may make in each API process (burst: twice as many), 1–${MAX_RATE_LIMIT}; absent: RATE_LIMIT_PER_KEY`,
  }),
);

export const createProject = defineAdminOperation({
  operation: 'CreateProject',
  command: 'create-project',
  summary: 'Create a project (409 if it exists)',
  body: Strict({
    projectId: ProjectId,
    displayName: Type.Optional(Type.String({ maxLength: 256 })),
    deliveryEndpoint: Type.Optional(DeliveryEndpoint),
    globalHoldoutPercentage: GlobalHoldoutIn,
  }),
  response: Type.Object({ project: ProjectOut }),
  handler: async (body, ctx, actor) => {
    checkHoldout(body);
    return { project: presentProject(await ctx.projects.projects.create(body, actor)) };
  },
});

export const updateProject = defineAdminOperation({
  operation: 'UpdateProject',
  command: 'update-project',
  summary: 'Change a project’s display name, delivery address or global holdout',
  body: Strict({
    projectId: ProjectId,
    displayName: Type.Optional(Type.String({ maxLength: 256 })),
    deliveryEndpoint: Type.Optional(DeliveryEndpoint),
    globalHoldoutPercentage: GlobalHoldoutIn,
  }),
  response: Type.Object({ project: ProjectOut }),
  handler: async (body, ctx, actor) => {
    checkHoldout(body);
    return { project: presentProject(await ctx.projects.projects.update(body, actor)) };
  },
});

export const getProject = defineAdminOperation({
  operation: 'GetProject',
  command: 'get-project',
  summary: 'Read a project',
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ project: ProjectOut }),
  handler: async (body, ctx) => ({ project: presentProject(await ctx.projects.projects.require(body.projectId)) }),
});

export const listProjects = defineAdminOperation({
  operation: 'ListProjects',
  command: 'list-projects',
  summary: 'List every project',
  body: Strict({}),
  response: Type.Object({ projects: Type.Array(ProjectOut) }),
  handler: async (_body, ctx) => ({ projects: (await ctx.projects.projects.list()).map(presentProject) }),
});

export const createApiKey = defineAdminOperation({
  operation: 'CreateApiKey',
  command: 'create-api-key',
  summary: 'Issue an API key; the secret is shown once',
  body: Strict({
    projectId: ProjectId,
    permissions: Type.Array(PermissionT, { minItems: 1, maxItems: 3, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    requestsPerSecond: RequestsPerSecondIn,
  }),
  response: Type.Object({ apiKey: ApiKeyOut, key: Type.String() }),
  handler: async (body, ctx, actor) => {
    await ctx.projects.projects.require(body.projectId);
    // The LogEvents key is separate: LOG_EVENTS is never combined with another permission.
    if (body.permissions.includes('LOG_EVENTS') && body.permissions.length > 1) {
      throw invalidField('permissions', 'LOG_EVENTS must be the only permission of its key (the LogEvents key is separate)');
    }
    return ctx.projects.apiKeys.create(body, actor);
  },
});

export const listApiKeys = defineAdminOperation({
  operation: 'ListApiKeys',
  command: 'list-api-keys',
  summary: 'List a project’s keys (never the secrets)',
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ apiKeys: Type.Array(ApiKeyOut) }),
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    return { apiKeys: await ctx.projects.apiKeys.list(body.projectId) };
  },
});

export const revokeApiKey = defineAdminOperation({
  operation: 'RevokeApiKey',
  command: 'revoke-api-key',
  summary: 'Revoke a key; it stops working at once on every process',
  body: Strict({ projectId: ProjectId, keyId: Type.String({ minLength: 1, maxLength: 64 }) }),
  response: Type.Object({ apiKey: ApiKeyOut }),
  handler: async (body, ctx, actor) => ({ apiKey: await ctx.projects.apiKeys.revoke(body.projectId, body.keyId, actor) }),
});

const ChangeOut = Type.Object({
  changeId: Type.String(),
  time: TimestampOut,
  actor: Type.String(),
  operation: Type.String(),
  resourceKind: Type.String(),
  resourceId: Type.String(),
  /** Only what changed: the fields (and versions) that differ, before and after. */
  before: Type.Unknown(),
  after: Type.Unknown(),
  /** Present when the entry exceeded its byte cap and large values were replaced by a note. */
  truncated: Type.Optional(Type.Boolean()),
});

export const listChangesOp = defineAdminOperation({
  operation: 'ListChanges',
  command: 'list-changes',
  summary: 'The audit trail of a project, newest first',
  body: Strict({
    projectId: ProjectId,
    pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    pageToken: Type.Optional(Type.String({ pattern: '^[0-9]+-[0-9]+$' })),
  }),
  response: Type.Object({ changes: Type.Array(ChangeOut), nextPageToken: Type.Optional(Type.String()) }),
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    return ctx.projects.changeLog.list(body.projectId, body.pageSize ?? 50, body.pageToken);
  },
});

export const projectAdminOperations = [createProject, updateProject, getProject, listProjects, createApiKey, listApiKeys, revokeApiKey, listChangesOp] as const;
