import type { V1Operation } from './http/v1-operation.js';
import { catalogOperations } from './catalog/catalog.ops.js';
import { treatmentOperations } from './treatments/treatments.ops.js';
import { ingestOperations } from './ingestion/ingest.ops.js';
import { deliveryOperations } from './delivery/delivery.ops.js';
import { previewOperations } from './delivery/preview.ops.js';
import { impactOperations } from './impact/impact.ops.js';
import { userDataOperations } from './profiles/user-data.ops.js';
import { mutualExclusionOperations } from './catalog/mutual-exclusion.ops.js';

/** Every `/v1` operation. A test checks each one is registered and documented. */
export const v1Operations: V1Operation[] = [...catalogOperations, ...treatmentOperations, ...ingestOperations, ...deliveryOperations, ...previewOperations, ...impactOperations, ...userDataOperations, ...mutualExclusionOperations];
