import { Type, type TSchema } from 'typebox';

/** An int64 on input is a JSON number (integer) or a decimal string. */
export const Int64In = Type.Union([Type.Integer(), Type.String({ pattern: '^-?[0-9]{1,19}$' })], { description: 'int64: JSON integer or decimal string' });
/** int64 values are JSON strings in responses. */
export const Int64Out = Type.String({ pattern: '^-?[0-9]+$', description: 'int64 as a decimal string' });
/** RFC 3339 with an offset on input; the shape only: `parseRfc3339` (shared/platform/rfc3339.ts) decides. */
export const TimestampIn = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?([Zz]|[+-]\\d{2}:\\d{2})$',
  description: 'RFC 3339 timestamp with offset',
});
export const TimestampOut = Type.String({ description: 'RFC 3339 timestamp, UTC with Z' });
export const ProjectId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
export const NonEmpty = (max = 1024) => Type.String({ minLength: 1, maxLength: max });

/** Objects reject unknown fields: every request schema goes through here. */
export function Strict<T extends Record<string, TSchema>>(props: T, opts: Record<string, unknown> = {}) {
  return Type.Object(props, { additionalProperties: false, ...opts });
}

export const ErrorResponse = Type.Object({
  error: Type.Object({
    code: Type.Integer(),
    status: Type.String(),
    message: Type.String(),
    details: Type.Array(Type.Object({ field: Type.String(), description: Type.String() })),
  }),
});

export const Empty = Type.Object({}, { additionalProperties: false });

/** Who made the change; the web console sends TDS_CONSOLE. Default API. */
export const ModificationSourceIn = Type.Optional(
  Type.Union([Type.Literal('API'), Type.Literal('TDS_CONSOLE')], { description: 'API (default) or TDS_CONSOLE for changes made in the web console' }),
);
