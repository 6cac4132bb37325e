import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Static, TSchema } from 'typebox';
import type * as Wire from '../../client/src/wire.generated.js';
import { generateWire, WIRE_FILE } from '../../client/scripts/generate-wire.js';
import { v1Operations } from '../../api/v1.routes.js';
import { type ErrorResponse } from '../../shared/platform/http/common.schemas.js';
import { getAllSurfaces, getAllTreatmentTypes, insertSurface, insertTreatmentType, updateTreatmentType } from '../../api/catalog/catalog.ops.js';
import { getAllDataFields, getDataFields, insertDataField } from '../../api/aggregation/data-fields.ops.js';
import { getEventSchemas, insertEventSchema } from '../../api/catalog/event-schemas.ops.js';
import { getMutualExclusionGroups } from '../../api/catalog/mutual-exclusion.ops.js';
import { explainTreatmentsOperation, previewTreatmentOperation } from '../../api/delivery/preview.ops.js';
import { getTreatments } from '../../api/delivery/delivery.ops.js';
import { deleteUserDataOperation } from '../../api/profiles/user-data.ops.js';
import { getTreatmentReport, listDecisions } from '../../api/impact/impact.ops.js';
import { getAllTreatmentsOperation, getTreatmentOperation, insertTreatmentOperation, updateTreatmentOperation } from '../../api/treatments/treatments.ops.js';
import { logEvents, logTreatmentInteraction } from '../../api/ingestion/ingest.ops.js';

/**
 * The client's wire types are generated from the schemas the service validates with. Two checks:
 * the committed file is what the generator makes of today's schemas (else `npm run build -w
 * client` was not run), and, in the type checker (`npm run typecheck`), every generated type is
 * exactly `Static<>` of its schema, so a changed schema breaks the type check until the client's
 * types follow it.
 */
const OPERATIONS = {
  DeleteUserData: deleteUserDataOperation,
  ExplainTreatments: explainTreatmentsOperation,
  GetAllDataFields: getAllDataFields,
  GetAllSurfaces: getAllSurfaces,
  GetAllTreatments: getAllTreatmentsOperation,
  GetAllTreatmentTypes: getAllTreatmentTypes,
  GetDataFields: getDataFields,
  GetEventSchemas: getEventSchemas,
  GetMutualExclusionGroups: getMutualExclusionGroups,
  GetTreatment: getTreatmentOperation,
  GetTreatmentReport: getTreatmentReport,
  GetTreatments: getTreatments,
  InsertDataField: insertDataField,
  InsertEventSchema: insertEventSchema,
  InsertSurface: insertSurface,
  InsertTreatment: insertTreatmentOperation,
  InsertTreatmentType: insertTreatmentType,
  ListDecisions: listDecisions,
  LogEvents: logEvents,
  LogTreatmentInteraction: logTreatmentInteraction,
  PreviewTreatment: previewTreatmentOperation,
  UpdateTreatment: updateTreatmentOperation,
  UpdateTreatmentType: updateTreatmentType,
} satisfies Record<Wire.OperationName, { body: TSchema; response: TSchema }>;

type Ops = typeof OPERATIONS;

/** Exactly the same type (not merely assignable either way: an added optional member differs). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Same<A, B> = Equal<Deep<A>, Deep<B>>;
/** Intersections and aliases flattened, so only the shape is compared. */
type Deep<T> = T extends (infer U)[] ? Deep<U>[] : T extends object ? { [K in keyof T]: Deep<T[K]> } : T;

type Mismatched = {
  [K in keyof Ops]: Same<Wire.Operations[K]['request'], Static<Ops[K]['body']>> extends true
    ? Same<Wire.Operations[K]['response'], Static<Ops[K]['response']>> extends true
      ? never
      : `${K} response`
    : `${K} request`;
}[keyof Ops];

/** `never` when every generated type is its schema's; else the type error names the operation. */
const everyTypeMatches: [Mismatched] extends [never] ? true : Mismatched = true;
const errorBodyMatches: Same<Wire.ErrorBody, Static<typeof ErrorResponse>> = true;

describe('the client wire types', () => {
  it('cover every /v1 operation, named as the service names them', () => {
    expect(Object.keys(OPERATIONS).sort()).toEqual(v1Operations.map((o) => o.operation).sort());
    for (const op of v1Operations) expect(OPERATIONS[op.operation as keyof Ops], op.operation).toBe(op);
    expect(everyTypeMatches && errorBodyMatches).toBe(true);
  });

  it('are what the generator makes of the schemas today (else: npm run build -w client)', () => {
    expect(readFileSync(WIRE_FILE, 'utf8')).toBe(generateWire());
  });

  it('list the operations a management key may call', async () => {
    const { MANAGEMENT_OPERATIONS } = await import('../../client/src/wire.generated.js');
    const expected = v1Operations
      .filter((o) => o.permissions.includes('TREATMENT_MANAGEMENT'))
      .map((o) => o.operation)
      .sort();
    expect([...MANAGEMENT_OPERATIONS].sort()).toEqual(expected);
    expect(MANAGEMENT_OPERATIONS).not.toContain('LogEvents');
  });
});
