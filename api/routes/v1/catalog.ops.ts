import type { V1Operation } from '../../v1-operation.js';

/** InsertSurface, GetAllSurfaces, InsertTreatmentType, UpdateTreatmentType, GetAllTreatmentTypes, InsertDataField, GetDataFields. */
export const catalogOperations: V1Operation[] = [];
