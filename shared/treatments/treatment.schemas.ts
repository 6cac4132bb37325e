import { Type, type Static } from 'typebox';
import type { Condition, DataMissingBehaviour } from './types.js';
import { Int64In, Int64Out, ModificationSourceIn, NonEmpty, ProjectId, Strict, TimestampIn, TimestampOut } from '../platform/http/common.schemas.js';

/**
 * Wire shapes of InsertTreatment, UpdateTreatment, GetTreatment and GetAllTreatments.
 * Requests are strict; responses list every field so that serialisation never drops one.
 */

export const CONDITIONS = [
  'UNSPECIFIED_CONDITION',
  'LESS_THAN',
  'LESS_THAN_OR_EQUALS',
  'GREATER_THAN',
  'GREATER_THAN_OR_EQUALS',
  'EQUALS',
  'NOT_EQUALS',
  'IS_AFTER_CURRENT_TIMESTAMP_MINUS',
  'IS_BEFORE_CURRENT_TIMESTAMP_MINUS',
  'CONTAINS',
  'ANY_OF',
  'DOES_NOT_CONTAIN',
  'NOT_ANY_OF',
  'CONTAINS_ANY_OF',
  'DOES_NOT_CONTAIN_ANY_OF',
] as const satisfies readonly Condition[];

export const DATA_MISSING_BEHAVIOURS = [
  'ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED',
  'EVALUATE_TO_ELIGIBLE',
  'EVALUATE_TO_INELIGIBLE',
] as const satisfies readonly DataMissingBehaviour[];

export const TREATMENT_STATUSES = ['STATUS_UNSPECIFIED', 'LIVE', 'DRAFT', 'SCHEDULED', 'ARCHIVED', 'PAUSED'] as const;

const TreatmentIdIn = Type.String({ minLength: 1, maxLength: 32, description: 'treatmentId (decimal string)' });
const ExternalIdIn = Type.String({ minLength: 1, maxLength: 256 });
const Actor = NonEmpty(256);
const Name = NonEmpty(256);
const Description = Type.String({ maxLength: 4096 });
const GroupName = Type.String({ maxLength: 256, description: 'mutual exclusion group name; "" clears it on update' });

// ------------------------------------------------------------------------------------------------
// Request parts

const ContentFieldIn = Strict({ fieldName: NonEmpty(256), stringValue: Type.String({ maxLength: 1_000_000 }) });

/** Both lists may be omitted (a JSON encoder may drop empty repeated fields); omitted = empty. */
export const ContentIn = Strict({
  contentByLanguage: Type.Optional(
    Type.Array(Strict({ languageCode: Strict({ languageCode: Type.String({ maxLength: 64 }) }), contentFields: Type.Optional(Type.Array(ContentFieldIn)) }), {
      maxItems: 500,
    }),
  ),
  languageAgnosticContentFields: Type.Optional(Type.Array(ContentFieldIn)),
});

export const EligibilityRuleIn = Strict({
  dataFieldId: Int64In,
  condition: Type.Enum(CONDITIONS),
  rhsValue: Type.String({ maxLength: 65_536 }),
  dataMissingBehaviour: Type.Optional(Type.Enum(DATA_MISSING_BEHAVIOURS)),
});

/** `rules` omitted is an empty list: on update that still replaces every stored rule. */
export const EligibilityRulesIn = Strict({ rules: Type.Optional(Type.Array(EligibilityRuleIn, { maxItems: 100 })) });
export const RemovedSurfacesIn = Strict({ surfaces: Type.Optional(Type.Array(Strict({ name: NonEmpty(128) }), { maxItems: 1000 })) });
export const TagsIn = Type.Array(Strict({ name: NonEmpty(256) }), { maxItems: 100 });
export const TargetActionIn = Strict({ eventId: Int64In });

/** The version-level fields shared by insert and update. */
const versionFieldsIn = {
  endTimestamp: Type.Optional(TimestampIn),
  targetAction: Type.Optional(TargetActionIn),
  removedSurfaces: Type.Optional(RemovedSurfacesIn),
  tags: Type.Optional(TagsIn),
  eligibilityRules: Type.Optional(EligibilityRulesIn),
};

/**
 * Delivery controls (holdout, QA users, fallback, frequency cap). Treatment-level: setting them changes the treatment,
 * never creates a version, and applies to whichever version is served.
 */
export const PercentageIn = Type.Number({ minimum: 0, maximum: 100, description: '0–100, at most two decimals' });
export const FrequencyCapIn = Strict({
  maxCount: Type.Integer({ minimum: 1, maximum: 1000 }),
  windowName: Type.String({ maxLength: 16, description: 'LAST_<n>D, 1 ≤ n ≤ 365' }),
  countOf: Type.Union([Type.Literal('VIEWED'), Type.Literal('RETURNED')]),
});
const controlFieldsIn = {
  holdoutPercentage: Type.Optional(PercentageIn),
  qaUserIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
      maxItems: 100,
      description: 'users who get the newest version whatever its status; [] clears',
    }),
  ),
  isFallback: Type.Optional(Type.Boolean()),
  frequencyCap: Type.Optional(FrequencyCapIn),
};

// ------------------------------------------------------------------------------------------------
// Requests

export const InsertTreatmentRequest = Strict({
  projectId: ProjectId,
  name: Name,
  description: Description,
  treatmentTypeName: NonEmpty(256),
  lastModifiedBy: Actor,
  modificationSource: ModificationSourceIn,
  startTimestamp: TimestampIn,
  content: ContentIn,
  ...versionFieldsIn,
  externalTreatmentId: Type.Optional(ExternalIdIn),
  shouldPublish: Type.Optional(Type.Boolean()),
  mutualExclusionGroup: Type.Optional(GroupName),
  ...controlFieldsIn,
});
export type InsertTreatmentBody = Static<typeof InsertTreatmentRequest>;

export const UpdateTreatmentRequest = Strict({
  projectId: ProjectId,
  treatmentId: Type.Optional(TreatmentIdIn),
  externalTreatmentId: Type.Optional(ExternalIdIn),
  lastModifiedBy: Actor,
  modificationSource: ModificationSourceIn,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  startTimestamp: Type.Optional(TimestampIn),
  content: Type.Optional(ContentIn),
  ...versionFieldsIn,
  clearEndTimestamp: Type.Optional(Type.Boolean({ description: 'true: the new version never ends (not with endTimestamp); a version-level change' })),
  clearTargetAction: Type.Optional(Type.Boolean({ description: 'true: the new version has no target action (not with targetAction); a version-level change' })),
  shouldPublish: Type.Optional(Type.Boolean()),
  mutualExclusionGroup: Type.Optional(GroupName),
  shouldDelete: Type.Optional(Type.Boolean()),
  shouldPause: Type.Optional(Type.Boolean()),
  ...controlFieldsIn,
  clearFrequencyCap: Type.Optional(Type.Boolean({ description: 'true removes the frequency cap' })),
});
export type UpdateTreatmentBody = Static<typeof UpdateTreatmentRequest>;

/** Fields that may accompany shouldPause / shouldDelete (spec UpdateTreatment). */
export const PAUSE_DELETE_FIELDS: ReadonlySet<string> = new Set([
  'projectId',
  'treatmentId',
  'externalTreatmentId',
  'lastModifiedBy',
  'modificationSource',
  'shouldPause',
  'shouldDelete',
]);

export const GetTreatmentRequest = Strict({ projectId: ProjectId, treatmentId: TreatmentIdIn });

export const GetAllTreatmentsRequest = Strict({
  projectId: ProjectId,
  treatmentFilter: Type.Optional(Strict({ treatmentTypeName: Type.Optional(Type.String({ maxLength: 256 })) })),
  treatmentVersionFilter: Type.Optional(
    Strict({
      surface: Type.Optional(Strict({ surfaceNames: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 1000 })) })),
      tag: Type.Optional(Strict({ tags: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 })) })),
    }),
  ),
  maxNonLiveVersions: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
});
export type GetAllTreatmentsBody = Static<typeof GetAllTreatmentsRequest>;

// ------------------------------------------------------------------------------------------------
// Responses

const ContentFieldOut = Type.Object({ fieldName: Type.String(), stringValue: Type.String() });
const NameOut = Type.Object({ name: Type.String() });

export const ContentOut = Type.Object({
  contentByLanguage: Type.Array(Type.Object({ languageCode: Type.Object({ languageCode: Type.String() }), contentFields: Type.Array(ContentFieldOut) })),
  languageAgnosticContentFields: Type.Array(ContentFieldOut),
});

const ContentFieldTypeOut = Type.Object({ fieldName: Type.String(), valueLengthLimit: Type.Integer(), dataType: Type.String() });

/** The delivery form of a treatment type, as embedded in a Treatment. */
export const TreatmentTypeDeliveryOut = Type.Object({
  projectId: Type.String(),
  name: Type.String(),
  deliveryType: Type.String(),
  languageSpecificContentFieldTypes: Type.Array(ContentFieldTypeOut),
  languageAgnosticContentFieldTypes: Type.Array(ContentFieldTypeOut),
  surfaces: Type.Array(NameOut),
});

export const TreatmentVersionOut = Type.Object({
  /** not in the spec's record: lets operators tell versions apart (1, 2, 3 ... in creation order) */
  versionNumber: Type.Integer(),
  status: Type.Enum(TREATMENT_STATUSES),
  tags: Type.Array(NameOut),
  startTimestamp: TimestampOut,
  endTimestamp: Type.Optional(TimestampOut),
  content: ContentOut,
  eligibilityRules: Type.Object({
    rules: Type.Array(Type.Object({ dataFieldId: Int64Out, condition: Type.String(), rhsValue: Type.String(), dataMissingBehaviour: Type.String() })),
  }),
  removedSurfaces: Type.Object({ surfaces: Type.Array(NameOut) }),
  targetAction: Type.Optional(Type.Object({ eventId: Int64Out })),
  /** when the version was published; absent for a draft */
  publishTime: Type.Optional(TimestampOut),
  createTime: TimestampOut,
  lastModifiedTimestamp: TimestampOut,
});

export const MutualExclusionGroupOut = Type.Object({ projectId: Type.String(), mutualExclusionGroupId: Int64Out, name: Type.String() });

/**
 * The spec's GetTreatment definition calls the version list `treatment_versions`, while every
 * response sample (and the camelCase rule for responses) uses `versions`: responses use
 * `versions`, newest version first.
 */
export const TreatmentOut = Type.Object({
  projectId: Type.String(),
  treatmentId: Type.String(),
  treatmentType: TreatmentTypeDeliveryOut,
  name: Type.String(),
  description: Type.String(),
  status: Type.Enum(TREATMENT_STATUSES),
  versions: Type.Array(TreatmentVersionOut),
  lastModifiedBy: Type.String(),
  lastModifiedTimestamp: TimestampOut,
  modificationSource: Type.String(),
  externalTreatmentId: Type.Optional(Type.String()),
  mutualExclusionGroup: Type.Optional(MutualExclusionGroupOut),
  holdoutPercentage: Type.Number(),
  qaUserIds: Type.Array(Type.String()),
  isFallback: Type.Boolean(),
  frequencyCap: Type.Optional(Type.Object({ maxCount: Type.Integer(), windowName: Type.String(), countOf: Type.String() })),
});
export type TreatmentWire = Static<typeof TreatmentOut>;
export type TreatmentVersionWire = Static<typeof TreatmentVersionOut>;

export const TreatmentResponse = Type.Object({ treatment: TreatmentOut });

/** A published version as a DELIVERY key reads it: no eligibility rules. */
export const PublishedVersionOut = Type.Object(
  {
    versionNumber: Type.Integer(),
    status: Type.Union([Type.Literal('LIVE'), Type.Literal('SCHEDULED')]),
    tags: Type.Array(NameOut),
    startTimestamp: TimestampOut,
    endTimestamp: Type.Optional(TimestampOut),
    content: ContentOut,
    removedSurfaces: Type.Object({ surfaces: Type.Array(NameOut) }),
    targetAction: Type.Optional(Type.Object({ eventId: Int64Out })),
    publishTime: TimestampOut,
  },
  { title: 'PublishedTreatmentVersion', description: 'A LIVE or SCHEDULED version without its eligibility rules' },
);

/**
 * A treatment as a DELIVERY key (a public key, shipped in apps) reads it: what an app may show.
 * Its ids, name, type and status, and only its published versions (LIVE or SCHEDULED), newest
 * first, without rules; drafts, ended versions, QA users, holdout and the other delivery controls,
 * the description and who changed it are left out.
 */
export const PublicTreatmentOut = Type.Object(
  {
    projectId: Type.String(),
    treatmentId: Type.String(),
    externalTreatmentId: Type.Optional(Type.String()),
    treatmentType: TreatmentTypeDeliveryOut,
    name: Type.String(),
    status: Type.Enum(TREATMENT_STATUSES),
    versions: Type.Array(PublishedVersionOut),
  },
  { title: 'PublicTreatment', description: 'GetTreatment with a DELIVERY key (without TREATMENT_MANAGEMENT)' },
);
export type PublicTreatmentWire = Static<typeof PublicTreatmentOut>;
export type PublishedVersionWire = Static<typeof PublishedVersionOut>;

/**
 * GetTreatment: the whole record for a key with TREATMENT_MANAGEMENT, the public form for a
 * DELIVERY key. The serialiser writes the first form the answer satisfies, member by member of
 * that form only: a public answer lacks the whole record's required members (every version its
 * rules), so it is written as the public form and nothing else can pass.
 */
export const GetTreatmentResponse = Type.Object({
  treatment: Type.Union([
    Type.Object(TreatmentOut.properties, { title: 'Treatment', description: 'with a TREATMENT_MANAGEMENT key: the whole record' }),
    PublicTreatmentOut,
  ]),
});
export const TreatmentsResponse = Type.Object({ treatments: Type.Array(TreatmentOut) });
