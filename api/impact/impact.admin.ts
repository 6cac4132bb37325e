import { asAdminOperation } from '../http/v1-operation.js';
import { getTreatmentReport, listDecisions } from './impact.ops.js';

/**
 * The measuring-impact operations for operators and the CLI (`npm run admin -- get-treatment-report
 * --project-id p --treatment-id 1`): the same schema and handler as the `/v1` operation, with the
 * admin token instead of a project key.
 */
export const impactAdminOperations = [asAdminOperation(listDecisions, 'list-decisions'), asAdminOperation(getTreatmentReport, 'get-treatment-report')] as const;
