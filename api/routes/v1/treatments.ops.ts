import type { V1Operation } from '../../v1-operation.js';

/** InsertTreatment, UpdateTreatment, GetTreatment, GetAllTreatments. */
export const treatmentOperations: V1Operation[] = [];
