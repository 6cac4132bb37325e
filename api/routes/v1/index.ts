import type { V1Operation } from '../../v1-operation.js';
import { catalogOperations } from './catalog.ops.js';
import { treatmentOperations } from './treatments.ops.js';
import { ingestOperations } from './ingest.ops.js';
import { deliveryOperations } from './delivery.ops.js';
import { previewOperations } from './preview.ops.js';
import { impactOperations } from './impact.ops.js';
import { userDataOperations } from './user-data.ops.js';
import { mutualExclusionOperations } from './mutual-exclusion.ops.js';

/** Every `/v1` operation. A test checks each one is registered and documented. */
export const v1Operations: V1Operation[] = [...catalogOperations, ...treatmentOperations, ...ingestOperations, ...deliveryOperations, ...previewOperations, ...impactOperations, ...userDataOperations, ...mutualExclusionOperations];
