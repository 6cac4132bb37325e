import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../../shared/service-context.js';
import { registerAdminOperation, type AdminOperation } from '../../admin-operation.js';
import { projectAdminOperations } from './projects.admin.js';
import { ingestAdminOperations } from './ingest.admin.js';
import { explainAdminOperations } from './explain.admin.js';
import { aggregationAdminOperations } from './aggregations.admin.js';
import { pubSubAdminOperations } from './pubsub.admin.js';
import { previewTreatmentAdmin } from '../v1/preview.ops.js';
import { impactAdminOperations } from './impact.admin.js';
import { deleteUserDataAdmin } from '../v1/user-data.ops.js';
import { queueAdminOperations } from './queues.admin.js';

/** Every admin operation, for the HTTP routes and the CLI alike. */
export const adminOperations: AdminOperation[] = [...projectAdminOperations, ...ingestAdminOperations, ...explainAdminOperations, previewTreatmentAdmin, ...aggregationAdminOperations, ...pubSubAdminOperations, ...impactAdminOperations, deleteUserDataAdmin, ...queueAdminOperations] as AdminOperation[];

export async function registerAdminRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  for (const op of adminOperations) registerAdminOperation(app, ctx, op);
}
