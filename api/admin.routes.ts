import type { FastifyInstance } from 'fastify';
import type { ApiServices } from './compose-api.js';
import { registerAdminOperation } from './http/admin-operation.js';
import { adminOperationList } from './http/v1-operation.js';
import { projectAdminOperations } from './projects/projects.admin.js';
import { ingestAdminOperations } from './ingestion/ingest.admin.js';
import { explainAdminOperations } from './delivery/explain.admin.js';
import { aggregationAdminOperations } from './aggregation/aggregations.admin.js';
import { pubSubAdminOperations } from './ingestion/pubsub.admin.js';
import { previewTreatmentAdmin } from './delivery/preview.ops.js';
import { impactAdminOperations } from './impact/impact.admin.js';
import { eventSchemaAdminOperations } from './catalog/event-schemas.ops.js';
import { getUserProfile } from './profiles/user-profile.admin.js';
import { deleteUserDataAdmin } from './profiles/user-data.ops.js';
import { queueAdminOperations } from './ingestion/queues.admin.js';

/** Every admin operation, for the HTTP routes and the CLI alike. */
export const adminOperations = adminOperationList(
  ...projectAdminOperations,
  getUserProfile,
  ...ingestAdminOperations,
  ...explainAdminOperations,
  previewTreatmentAdmin,
  ...aggregationAdminOperations,
  ...pubSubAdminOperations,
  ...eventSchemaAdminOperations,
  ...impactAdminOperations,
  deleteUserDataAdmin,
  ...queueAdminOperations,
);

export async function registerAdminRoutes(app: FastifyInstance, ctx: ApiServices): Promise<void> {
  for (const op of adminOperations) registerAdminOperation(app, ctx, op);
}
