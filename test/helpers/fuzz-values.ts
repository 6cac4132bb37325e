/// <reference lib="es2024.string" />
import fc from 'fast-check';

/*
 * The fuzz test's generated values (test/security/fuzz.test.ts): odd timestamps, strings, numbers,
 * keys and deep values, any JSON, and bodies close to an operation's JSON schema.
 */
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

const oddTimestamp = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -400 * DAY, max: 2 * DAY }).map((d) => iso(Date.now() + d)) },
  fc.constantFrom(
    '2026-02-30T00:00:00Z',
    '2026-06-15T24:00:00Z',
    '2026-06-15T23:59:60Z',
    '2026-06-15T12:00:00',
    '2026-06-15T12:00:00+24:00',
    '0000-01-01T00:00:00Z',
    '1899-12-31T23:59:59Z',
    '1900-01-01T00:00:00Z',
    '2299-12-31T23:59:59.999999999Z',
    '9999-12-31T23:59:59Z',
    '1970-01-01T00:00:00Z',
    '2026-06-15 12:00:00z',
    '2026-06-15T12:00:00.1234567890Z',
  ),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

export const weirdString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '𝔘𝔫𝔦',
    'é'.repeat(300),
    '{{a|b}}',
    `{{a${' '.repeat(5000)}`,
    '{{'.repeat(3000),
    'a,'.repeat(3000),
    '[[[[[[[[',
    '__proto__',
    'constructor',
    '1e309',
    '-0',
    'NaN',
  ),
  fc.integer({ min: 100, max: 70_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 20_000 }).map((n) => '_'.repeat(n)),
  oddTimestamp,
);

export const weirdNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), Number('9223372036854775807'), 0.1, 1e-320, 100, 101, -1),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => n.toString()),
);

/**
 * Deep nesting, up to 200,000 levels: a placeholder string that `send` replaces with the nested
 * JSON text (JSON.stringify itself would overflow the stack on such a value).
 */
const deepValue = fc
  .tuple(fc.constantFrom('array', 'object'), fc.oneof(fc.integer({ min: 30, max: 40 }), fc.integer({ min: 40, max: 200_000 })))
  .map(([kind, depth]) => `@@deep:${kind}:${depth}@@`);

export function expandDeep(payload: string): string {
  return payload.replace(/"@@deep:(array|object):(\d+)@@"/g, (_m, kind: string, n: string) => {
    const depth = Number(n);
    return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  });
}

const weirdKey = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'project_id', 'user_id', '_', '__', 'a__b', 'A_', 'é_ü'),
  fc.integer({ min: 200, max: 5000 }).map((n) => '_'.repeat(n)),
  fc.integer({ min: 5000, max: 300_000 }).map((n) => `${'_'.repeat(n)}!`),
);

const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    weirdString,
    weirdNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(weirdKey, tie('v'), { maxKeys: 5 }),
  ),
})).v;

export const wrong = fc.oneof(anyJson, deepValue);

export type Schema = Record<string, any>;

export const toSnake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Values close to `schema`, with a wrong value now and then, so bodies reach the handlers too. */
export function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 8) return anyJson;
  return fc.oneof({ weight: 40, arbitrary: closeTo(schema, depth) }, { weight: 1, arbitrary: wrong });
}

function closeTo(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...(schema.anyOf as Schema[]).map((sub) => closeTo(sub, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (schema.type) {
    case 'object': {
      const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
      const pattern = schema.patternProperties ? (Object.values(schema.patternProperties)[0] as Schema) : undefined;
      const required = new Set<string>(schema.required ?? []);
      // required fields nearly always present, optional ones half the time
      const fixed = fc
        .tuple(...props.map(([k, sub]) => fc.tuple(fc.constant(k), fromSchema(sub, depth + 1), fc.integer({ min: 0, max: 19 }))))
        .map((entries) => Object.fromEntries(entries.filter(([k, , dice]) => (required.has(k) ? dice > 0 : dice >= 10)).map(([k, v]) => [k, v])));
      const mapped = pattern
        ? fc.dictionary(fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), weirdKey), fromSchema(pattern, depth + 1), { maxKeys: 4 })
        : fc.constant({});
      const unknownField = fc.oneof({ weight: 15, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(weirdKey, anyJson) });
      return fc.tuple(fixed, mapped, fc.boolean(), unknownField).map(([obj, extra, snake, unknown]) => {
        const out: Record<string, unknown> = { ...extra };
        for (const [k, v] of Object.entries(obj as Record<string, unknown>)) out[snake ? toSnake(k) : k] = v;
        if (unknown) out[unknown[0]] = unknown[1];
        return out;
      });
    }
    case 'array':
      return fc.array(fromSchema((schema.items ?? {}) as Schema, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'string':
      if (typeof schema.pattern === 'string' && schema.pattern.includes('\\d{4}-')) return oddTimestamp;
      return fc.oneof(
        fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) }),
        fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/),
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            '1',
            '2',
            '0',
            'home',
            'banner',
            'body',
            'tier',
            'purchase',
            'u1',
            'en',
            'en-US',
            'LAST_7D',
            'IN_APP',
            'projects/p/topics/t',
          ),
        },
      );
    case 'integer':
      return fc.oneof(fc.integer({ min: -5, max: 1000 }), weirdNumber);
    case 'number':
      return fc.oneof(fc.double({ min: -1000, max: 1000, noNaN: true }), weirdNumber);
    case 'boolean':
      return fc.boolean();
    default:
      return anyJson;
  }
}
