import { Type, type Static } from 'typebox';
import { Int64In, Int64Out, ProjectId, Strict, TimestampIn, TimestampOut } from '../platform/http/common.schemas.js';

/** ListDecisions. */
export const ListDecisionsBody = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256 }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 20' })),
});
export type ListDecisionsRequest = Static<typeof ListDecisionsBody>;

export const DecisionOut = Type.Object({
  projectId: Type.String(),
  userId: Type.String(),
  responseId: Type.String(),
  treatmentId: Type.String(),
  versionNumber: Type.Integer(),
  surface: Type.String(),
  rank: Int64Out,
  outcome: Type.Union([Type.Literal('RETURNED'), Type.Literal('HOLDOUT'), Type.Literal('GLOBAL_HOLDOUT'), Type.Literal('QA')]),
  decideTime: TimestampOut,
});

export const ListDecisionsResponse = Type.Object({ decisions: Type.Array(DecisionOut, { description: 'newest first' }) });

/** GetTreatmentReport. */
export const GetTreatmentReportBody = Strict({
  projectId: ProjectId,
  treatmentId: Int64In,
  startTimestamp: Type.Optional(TimestampIn),
  endTimestamp: Type.Optional(TimestampIn),
  attributionWindowDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, description: 'default 7' })),
});

const ReportGroupOut = Type.Object({
  group: Type.Union([Type.Literal('TREATED'), Type.Literal('HOLDOUT')]),
  users: Type.Number(),
  impressions: Type.Number(),
  clicks: Type.Number(),
  conversions: Type.Optional(Type.Number({ description: 'only when the treatment has a target action' })),
  conversionRate: Type.Optional(Type.Number({ description: 'conversions / users; only with a target action and users' })),
});

export const GetTreatmentReportResponse = Type.Object({
  report: Type.Object({
    treatmentId: Int64Out,
    conversionEventName: Type.Optional(Type.String()),
    groups: Type.Array(ReportGroupOut),
    uplift: Type.Optional(
      Type.Object({
        absolute: Type.Number({ description: 'conversion rate TREATED − HOLDOUT' }),
        relative: Type.Optional(Type.Number({ description: 'absolute / HOLDOUT rate; absent when that rate is 0' })),
        confidenceInterval95: Type.Object({ low: Type.Number(), high: Type.Number() }, { description: 'of the absolute uplift (normal approximation)' }),
      }),
    ),
    computeTime: TimestampOut,
  }),
});
