import { Type } from 'typebox';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import { checkTopicPath, createPubSub, ensureSubscription, subscriptionPath } from '../../shared/platform/pubsub/pubsub.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the Pub/Sub source handlers use: the project check and the sources stored in Redis. */
export type PubSubAdminDeps = Pick<ApiServices, 'config' | 'projects' | 'ingestion'>;
const defineAdminOperation = adminOperationsUsing<PubSubAdminDeps>();

const PubSubSourceOut = Type.Object({ projectId: Type.String(), topic: Type.String(), subscription: Type.String() });

/** The subscription exists before the source is stored, so a missing topic or an unreachable Pub/Sub is the operator's answer, not a worker's log line. */
async function ensureOnTopic(ctx: Pick<ApiServices, 'config'>, source: { topic: string; subscription: string }): Promise<void> {
  const pubsub = await createPubSub(ctx.config);
  try {
    await ensureSubscription(pubsub, source, { replace: true });
  } finally {
    await pubsub.close();
  }
}

export const setPubSubSource = defineAdminOperation({
  operation: 'SetPubSubSource',
  command: 'set-pubsub-source',
  summary: 'Ingest a project’s Pub/Sub topic: creates (or reuses) the service’s subscription on it; every workers process starts pulling at once',
  body: Strict({ projectId: ProjectId, topic: Type.String({ minLength: 1, maxLength: 512, description: 'projects/<project>/topics/<topic>' }) }),
  response: Type.Object({ pubSubSource: PubSubSourceOut }),
  handler: async (body, ctx, actor) => {
    await ctx.projects.projects.require(body.projectId);
    checkTopicPath(body.topic);
    const source = { projectId: body.projectId, topic: body.topic, subscription: subscriptionPath(ctx.config.pubsubProjectId, body.projectId) };
    await ensureOnTopic(ctx, source);
    return { pubSubSource: await ctx.ingestion.pubsubSources.set(source, actor) };
  },
});

export const getPubSubSource = defineAdminOperation({
  operation: 'GetPubSubSource',
  command: 'get-pubsub-source',
  summary: 'A project’s Pub/Sub source (404 when it has none)',
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ pubSubSource: PubSubSourceOut }),
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    return { pubSubSource: await ctx.ingestion.pubsubSources.require(body.projectId) };
  },
});

export const clearPubSubSource = defineAdminOperation({
  operation: 'ClearPubSubSource',
  command: 'clear-pubsub-source',
  summary: 'Stop ingesting a project’s topic; the subscription is kept, so messages published meanwhile wait in it (404 when there is no source)',
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ pubSubSource: PubSubSourceOut }),
  handler: async (body, ctx, actor) => {
    await ctx.projects.projects.require(body.projectId);
    return { pubSubSource: await ctx.ingestion.pubsubSources.clear(body.projectId, actor) };
  },
});

export const pubSubAdminOperations = [setPubSubSource, getPubSubSource, clearPubSubSource] as const;
