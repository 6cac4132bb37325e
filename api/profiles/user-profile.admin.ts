import { Type } from 'typebox';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import { plainValue } from '../../shared/ingestion/index.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What GetUserProfile uses: the project check, the stored profile and the data fields' values. */
export type UserProfileAdminDeps = Pick<ApiServices, 'projects' | 'profiles' | 'aggregation'>;
const defineAdminOperation = adminOperationsUsing<UserProfileAdminDeps>();

const JsonValue = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

/** Profile values for operators: user properties and computed data-field values, as plain JSON. */
export const getUserProfile = defineAdminOperation({
  operation: 'GetUserProfile',
  command: 'get-user-profile',
  summary: 'A user’s stored properties and computed data-field values',
  body: Strict({ projectId: ProjectId, userId: Type.String({ minLength: 1, maxLength: 256 }) }),
  response: Type.Object({
    profile: Type.Object({
      userId: Type.String(),
      userProperties: Type.Record(Type.String(), JsonValue),
      dataFields: Type.Record(Type.String(), JsonValue),
      /** The pre-login ids merged into this user. */
      mergedFrom: Type.Optional(Type.Array(Type.String())),
      /** This id was merged into that user; the profile shown is that user's. */
      mergedInto: Type.Optional(Type.String()),
    }),
  }),
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    const stored = await ctx.profiles.profiles.get(body.projectId, body.userId);
    const userProperties: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(stored.userProperties)) userProperties[k] = plainValue(v);
    const dataFields = await ctx.aggregation.dataFieldValues(body.projectId, stored);
    return {
      profile: {
        userId: body.userId,
        userProperties,
        dataFields,
        ...(stored.mergedFrom ? { mergedFrom: stored.mergedFrom } : {}),
        ...(stored.mergedInto !== undefined ? { mergedInto: stored.mergedInto } : {}),
      },
    };
  },
});
