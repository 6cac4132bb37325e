import { Type } from 'typebox';
import { DATA_FIELD_NAME_MAX, DATA_FIELD_NAME_PATTERN, INTERACTION_TYPES } from '../aggregation/index.js';
import { Int64In, Int64Out, ModificationSourceIn, NonEmpty, ProjectId, Strict, TimestampIn, TimestampOut } from '../platform/http/common.schemas.js';

/** Wire shapes of the catalogue operations (surfaces, treatment types, event schemas, data fields). */

/** A string enum that both Ajv and fast-json-stringify understand, with a readable 400 message. */
function StringEnum<T extends string>(values: readonly T[]) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values] });
}

// ---- surfaces ----
export const SURFACE_NAME_PATTERN = '^[A-Za-z0-9_.:/-]{1,128}$';
const SurfaceName = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: SURFACE_NAME_PATTERN,
  description: '1-128 letters, digits and _ - . : / (case-sensitive)',
});

const SurfaceOut = Type.Object({ projectId: Type.String(), name: Type.String(), description: Type.String(), createTime: TimestampOut });

export const InsertSurfaceBody = Strict({ projectId: ProjectId, name: SurfaceName, description: Type.Optional(Type.String({ maxLength: 1024 })) });
export const GetAllSurfacesBody = Strict({ projectId: ProjectId });
export const GetAllSurfacesResponse = Type.Object({ surfaces: Type.Array(SurfaceOut) });

// ---- treatment types (management form, plus an optional deliveryType) ----
export const CONTENT_FIELD_DATA_TYPES = ['CONTENT_FIELD_DATA_TYPE_UNSPECIFIED', 'STRING', 'HTML'] as const;
export const DELIVERY_TYPES = ['EMAIL', 'IN_APP', 'NOTIFICATION', 'WEBHOOK'] as const;
export const MAX_FIELD_LENGTH = 1_000_000;

const ContentFieldTypeIn = Strict({
  fieldName: NonEmpty(256),
  maximumLengthAllowed: Type.Integer({ minimum: 1, maximum: MAX_FIELD_LENGTH }),
  isPerLanguage: Type.Optional(Type.Boolean()),
  dataType: Type.Optional(StringEnum(CONTENT_FIELD_DATA_TYPES)),
});
const ContentFieldTypeOut = Type.Object({
  fieldName: Type.String(),
  maximumLengthAllowed: Type.Integer(),
  isPerLanguage: Type.Boolean(),
  dataType: Type.String(),
});
const SurfaceRefIn = Strict({ surfaceName: SurfaceName });
const TypeName = Type.String({ maxLength: 256, description: 'must not be empty' });
const LastModifiedBy = NonEmpty(256);

const TreatmentTypeOut = Type.Object({
  treatmentTypeId: Int64Out,
  projectId: Type.String(),
  treatmentTypeName: Type.String(),
  contentFieldTypes: Type.Array(ContentFieldTypeOut),
  surfaces: Type.Array(Type.Object({ surfaceName: Type.String() })),
  deliveryType: Type.String(),
  lastModifiedBy: Type.String(),
  lastModifiedTimestamp: TimestampOut,
  modificationSource: Type.String({ description: 'API or TDS_CONSOLE' }),
});

export const InsertTreatmentTypeBody = Strict({
  projectId: ProjectId,
  treatmentTypeName: TypeName,
  surfaces: Type.Optional(Type.Array(SurfaceRefIn, { maxItems: 1000 })),
  contentFieldTypes: Type.Array(ContentFieldTypeIn, { maxItems: 200 }),
  deliveryType: Type.Optional(StringEnum(DELIVERY_TYPES)),
  lastModifiedBy: LastModifiedBy,
  modificationSource: ModificationSourceIn,
});
export const UpdateTreatmentTypeBody = Strict({
  projectId: ProjectId,
  treatmentTypeId: Int64In,
  treatmentTypeName: Type.Optional(TypeName),
  surfaces: Type.Optional(Type.Array(SurfaceRefIn, { maxItems: 1000 })),
  clearSurfaces: Type.Optional(Type.Boolean()),
  contentFieldTypes: Type.Array(ContentFieldTypeIn, { maxItems: 200 }),
  deliveryType: Type.Optional(StringEnum(DELIVERY_TYPES)),
  lastModifiedBy: LastModifiedBy,
  modificationSource: ModificationSourceIn,
});
export const TreatmentTypeResponse = Type.Object({ treatmentType: TreatmentTypeOut });
export const GetAllTreatmentTypesBody = Strict({ projectId: ProjectId });
export const GetAllTreatmentTypesResponse = Type.Object({ treatmentTypes: Type.Array(TreatmentTypeOut) });

// ---- event schemas ----
export const EventName = Type.String({ minLength: 1, maxLength: 256 });
export const EventSchemaOut = Type.Object({ eventId: Int64Out, eventName: Type.String(), createTime: TimestampOut });
export const InsertEventSchemaBody = Strict({ projectId: ProjectId, eventName: EventName });
export const InsertEventSchemaResponse = Type.Object({ eventSchema: EventSchemaOut });
export const GetEventSchemasBody = Strict({ projectId: ProjectId });
export const GetEventSchemasResponse = Type.Object({ eventSchemas: Type.Array(EventSchemaOut, { description: 'ascending eventId' }) });

// ---- data fields ----
export const USER_PROPERTY_TYPES = ['BOOLEAN', 'STRING', 'INTEGER'] as const;

const DataFieldOut = Type.Object({
  dataFieldId: Int64Out,
  projectId: Type.String(),
  name: Type.String(),
  userProperty: Type.Object({ dataType: Type.String() }),
});

export const InsertDataFieldBody = Strict({
  projectId: ProjectId,
  name: Type.String({ minLength: 1, maxLength: DATA_FIELD_NAME_MAX, pattern: DATA_FIELD_NAME_PATTERN }),
  userProperty: Strict({ dataType: StringEnum(USER_PROPERTY_TYPES) }),
});
export const InsertDataFieldResponse = Type.Object({ dataField: DataFieldOut });

/** Aggregation members are all optional here; "exactly one" is checked with a precise field path by the domain. */
function aggregations() {
  return {
    dailyCountAggregation: Type.Optional(Strict({ windowName: Type.String({ maxLength: 32 }) })),
    firstTimestampAggregation: Type.Optional(Strict({})),
    latestTimestampAggregation: Type.Optional(Strict({})),
    daysSinceFirstTimestampAggregation: Type.Optional(Strict({})),
    daysSinceLastTimestampAggregation: Type.Optional(Strict({})),
  };
}
function aggregationsOut() {
  return {
    dailyCountAggregation: Type.Optional(Type.Object({ windowName: Type.String() })),
    firstTimestampAggregation: Type.Optional(Type.Object({})),
    latestTimestampAggregation: Type.Optional(Type.Object({})),
    daysSinceFirstTimestampAggregation: Type.Optional(Type.Object({})),
    daysSinceLastTimestampAggregation: Type.Optional(Type.Object({})),
  };
}

const PropertyValueIn = Strict({
  longValue: Type.Optional(Int64In),
  doubleValue: Type.Optional(Type.Number()),
  stringValue: Type.Optional(Type.String({ maxLength: 4096 })),
  booleanValue: Type.Optional(Type.Boolean()),
  timestampValue: Type.Optional(TimestampIn),
});
const PropertyValueOut = Type.Object({
  longValue: Type.Optional(Int64Out),
  doubleValue: Type.Optional(Type.Number()),
  stringValue: Type.Optional(Type.String()),
  booleanValue: Type.Optional(Type.Boolean()),
  timestampValue: Type.Optional(Type.String()),
});

const DataFieldParamsIn = Strict({
  userAttributeDataFieldParams: Type.Optional(Strict({ propertyName: NonEmpty(DATA_FIELD_NAME_MAX) })),
  treatmentDataFieldParams: Type.Optional(
    Strict({
      treatmentInteractionType: StringEnum(INTERACTION_TYPES),
      treatmentId: Type.Optional(Int64In),
      surfaceId: Type.Optional(NonEmpty(256)),
      surfaceName: Type.Optional(SurfaceName),
      isDistinctInteraction: Type.Optional(Type.Boolean()),
      ...aggregations(),
    }),
  ),
  eventDataFieldParams: Type.Optional(
    Strict({
      eventSchemaName: NonEmpty(256),
      propertyValueByPropertyName: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), PropertyValueIn, { maxProperties: 50 })),
      ...aggregations(),
    }),
  ),
});
const DataFieldParamsOut = Type.Object({
  userAttributeDataFieldParams: Type.Optional(Type.Object({ propertyName: Type.String() })),
  treatmentDataFieldParams: Type.Optional(
    Type.Object({
      treatmentInteractionType: Type.String(),
      treatmentId: Type.Optional(Int64Out),
      surfaceId: Type.Optional(Type.String()),
      surfaceName: Type.Optional(Type.String()),
      isDistinctInteraction: Type.Optional(Type.Boolean()),
      ...aggregationsOut(),
    }),
  ),
  eventDataFieldParams: Type.Optional(
    Type.Object({
      eventSchemaName: Type.String(),
      propertyValueByPropertyName: Type.Optional(Type.Record(Type.String(), PropertyValueOut)),
      ...aggregationsOut(),
    }),
  ),
});

export const GetDataFieldsBody = Strict({ projectId: ProjectId, dataFieldParams: Type.Array(DataFieldParamsIn, { minItems: 1, maxItems: 100 }) });
export const GetDataFieldsResponse = Type.Object({
  dataFields: Type.Array(Type.Object({ dataFieldId: Int64Out, dataFieldParams: DataFieldParamsOut, dataFieldType: Type.String() })),
});

/** Resolved form of a GetDataFields entry, shared by InsertSurface. */
const ResolvedDataFieldOut = Type.Object({ dataFieldId: Int64Out, dataFieldParams: DataFieldParamsOut, dataFieldType: Type.String() });

/** `dataFields`: beyond the spec's surface, the fields every surface is provisioned with, as GetDataFields answers them. */
export const InsertSurfaceResponse = Type.Object({ surface: SurfaceOut, dataFields: Type.Array(ResolvedDataFieldOut) });

/**
 * One entry per data field. A user-property field (InsertDataField, or a GetDataFields user
 * attribute) has `projectId`, `name` and `userProperty`; an aggregation has `dataFieldParams`
 * (canonical form) and `dataFieldType`.
 */
export const GetAllDataFieldsBody = Strict({ projectId: ProjectId });
export const GetAllDataFieldsResponse = Type.Object({
  dataFields: Type.Array(
    Type.Object({
      dataFieldId: Int64Out,
      projectId: Type.Optional(Type.String()),
      name: Type.Optional(Type.String()),
      userProperty: Type.Optional(Type.Object({ dataType: Type.String() })),
      dataFieldParams: Type.Optional(DataFieldParamsOut),
      dataFieldType: Type.Optional(Type.String()),
      backfillStatus: Type.Union(
        [Type.Literal('NOT_APPLICABLE'), Type.Literal('PENDING'), Type.Literal('RUNNING'), Type.Literal('COMPLETE'), Type.Literal('FAILED')],
        {
          description:
            'the fill of an aggregation from history: PENDING (also while waiting for a retry), RUNNING, COMPLETE, FAILED; NOT_APPLICABLE for user properties',
        },
      ),
    }),
  ),
});
