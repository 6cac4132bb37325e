import { operationList } from './http/v1-operation.js';
import { catalogOperations } from './catalog/catalog.ops.js';
import { eventSchemaOperations } from './catalog/event-schemas.ops.js';
import { dataFieldOperations } from './aggregation/data-fields.ops.js';
import { treatmentOperations } from './treatments/treatments.ops.js';
import { ingestOperations } from './ingestion/ingest.ops.js';
import { deliveryOperations } from './delivery/delivery.ops.js';
import { previewOperations } from './delivery/preview.ops.js';
import { impactOperations } from './impact/impact.ops.js';
import { userDataOperations } from './profiles/user-data.ops.js';
import { mutualExclusionOperations } from './catalog/mutual-exclusion.ops.js';

/** Every `/v1` operation, in the order of the OpenAPI document. A test checks each one is registered and documented. */
export const v1Operations = operationList(
  ...catalogOperations,
  ...dataFieldOperations,
  ...treatmentOperations,
  ...ingestOperations,
  ...deliveryOperations,
  ...previewOperations,
  ...eventSchemaOperations,
  ...impactOperations,
  ...userDataOperations,
  ...mutualExclusionOperations,
);
