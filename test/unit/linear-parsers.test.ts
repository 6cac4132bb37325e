/// <reference lib="es2024.string" />
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { snakeToCamel } from '../../shared/platform/http/camelize.js';
import { hasPlaceholders, placeholderNames, renderContent } from '../../shared/delivery/content-render.js';
import { bodyShapeError, jsonTextShapeError, MAX_BODY_DEPTH, MAX_KEY_LENGTH, unpairedSurrogateAt } from '../../shared/platform/http/body-shape.js';
import { containsAnyMatcher } from '../../shared/rules/substring-search.js';
import { costGrowth, LINEAR_LIMIT } from '../helpers/complexity.js';

/** The regular expressions the hand-written scanners replaced: same results, without their quadratic cost. */
const OLD_SNAKE = /_+([a-zA-Z0-9])/g;
const OLD_PLACEHOLDER = String.raw`\{\{\s*([^{}|\s][^{}|]*?)\s*(?:\|([^{}]*))?\}\}`;

describe('snakeToCamel', () => {
  it('matches the former regular expression on any key', () => {
    const key = fc.array(fc.constantFrom('_', '_', 'a', 'B', '9', '-', ' ', 'é', '$'), { maxLength: 20 }).map((a) => a.join(''));
    fc.assert(
      fc.property(fc.oneof(key, fc.string()), (k) => {
        expect(snakeToCamel(k)).toBe(k.replace(OLD_SNAKE, (_m, c: string) => c.toUpperCase()));
      }),
      { numRuns: 5000 },
    );
  });

  it('is linear: 1,000,000 underscores cost per character what 10,000 do (the regular expression needed minutes)', () => {
    expect(costGrowth((n) => `${'_'.repeat(n)}!`, snakeToCamel, 10_000, 1_000_000)).toBeLessThan(LINEAR_LIMIT);
    expect(costGrowth((n) => '_a'.repeat(n / 2), snakeToCamel, 10_000, 1_000_000)).toBeLessThan(LINEAR_LIMIT);
  });
});

describe('placeholder scanner', () => {
  const text = fc
    .array(fc.constantFrom('{', '{{', '}', '}}', '|', ' ', '\t', '\u00a0', 'a', 'name', 'x y', '{{ a }}', '{{b|c}}'), { maxLength: 24 })
    .map((a) => a.join(''));

  it('finds exactly what the former regular expression found', () => {
    fc.assert(
      fc.property(fc.oneof(text, fc.string()), (value) => {
        const names = new Set<string>();
        const parts: unknown[] = [];
        let last = 0;
        for (const m of value.matchAll(new RegExp(OLD_PLACEHOLDER, 'g'))) {
          names.add(m[1]);
          if (m.index > last) parts.push(value.slice(last, m.index));
          parts.push({ name: m[1], fallback: m[2]?.trim() ?? '' });
          last = m.index + m[0].length;
        }
        if (last < value.length && parts.length > 0) parts.push(value.slice(last));
        expect(placeholderNames(value)).toEqual([...names]);
        expect(hasPlaceholders(value)).toBe(names.size > 0);
        // rendering with a lookup that names each placeholder shows the parts in order
        const rendered = JSON.parse(renderContent([{ fieldName: 'f', stringValue: value }], (n) => `<${n}>`)).f;
        const expected = parts.length === 0 ? value : parts.map((p) => (typeof p === 'string' ? p : `<${(p as { name: string }).name}>`)).join('');
        expect(rendered).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it('is linear on the inputs that made the regular expression quadratic', () => {
    const attacks: ((n: number) => string)[] = [
      (n) => `{{a${' '.repeat(n)}`,
      (n) => `{{${' a'.repeat(n / 2)}`,
      (n) => '{{'.repeat(n / 2),
      (n) => `{{a|${' '.repeat(n)}`,
      (n) => '{{a}'.repeat(n / 4),
    ];
    for (const make of attacks) {
      expect(
        costGrowth(make, (value) => renderContent([{ fieldName: 'f', stringValue: value }], () => 'x'), 10_000, 1_000_000),
        make(8),
      ).toBeLessThan(LINEAR_LIMIT);
      expect(costGrowth(make, placeholderNames, 10_000, 1_000_000), make(8)).toBeLessThan(LINEAR_LIMIT);
    }
  });
});

describe('body shape limits', () => {
  const nest = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
    return v;
  };

  it(`accepts ${MAX_BODY_DEPTH} levels, refuses one more with the path`, () => {
    expect(bodyShapeError(nest(MAX_BODY_DEPTH))).toBeUndefined();
    const err = bodyShapeError({ x: nest(MAX_BODY_DEPTH) });
    expect(err?.details[0].field).toMatch(/^x(\.a|\[0\])+$/);
    expect(err?.details[0].description).toMatch(/nested more than 32 levels/);
  });

  it('refuses 100,000 nested arrays without exhausting the stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(bodyShapeError({ projectId: 'p', events: deep })?.httpStatus).toBe(400);
  });

  it(`accepts keys of ${MAX_KEY_LENGTH} characters and refuses longer ones, naming a shortened key`, () => {
    expect(bodyShapeError({ events: [{ eventProperties: { ['k'.repeat(MAX_KEY_LENGTH)]: { stringValue: 'x' } } }] })).toBeUndefined();
    const err = bodyShapeError({ events: [{ eventProperties: { ['_'.repeat(60_000)]: 1 } }] });
    expect(err?.details[0].field).toBe(`events[0].eventProperties.${'_'.repeat(32)}…`);
    expect(err?.details[0].description).toMatch(/60000 characters/);
  });
});

describe('well-formed Unicode in the raw body', () => {
  // JSON.stringify writes a lone surrogate as an escape, a pair as the raw characters
  const field = (text: string) => jsonTextShapeError(text)?.details[0].field;

  it('names the value, the key or the item that holds an unpaired surrogate, escaped or raw', () => {
    expect(field(JSON.stringify({ projectId: 'p', userId: 'sur\ud800' }))).toBe('userId');
    expect(field(JSON.stringify({ userId: 'u', events: [{ eventName: 'e', eventProperties: { x: { stringValue: '\udc00tail' } } }] }))).toBe(
      'events[0].eventProperties.x.stringValue',
    );
    expect(field(JSON.stringify({ events: [{ userProperties: { ['k\udbff']: { stringValue: 'v' } } }] }))).toBe('events[0].userProperties.k\\udbff');
    expect(field(JSON.stringify({ surfaces: ['a', 'b', 'c\ud83d'] }))).toBe('surfaces[2]');
    expect(field(JSON.stringify('\ud800'))).toBe('(body)');
    // raw (not escaped) lone surrogates cannot come out of a UTF-8 body, but are found all the same
    expect(field(`{"a":"x","userId":"raw\ud800"}`)).toBe('userId');
    expect(field(`{"userId":"raw\udc00"}`)).toBe('userId');
    const err = jsonTextShapeError(JSON.stringify({ userId: 'sur\ud800' }));
    expect(err?.httpStatus).toBe(400);
    expect(err?.details[0].description).toMatch(/unpaired UTF-16 surrogate \(\\ud800\)/);
  });

  it('accepts pairs, however written, and text that only looks like an escape', () => {
    const ok = [
      JSON.stringify({ userId: '𝔘𝔫𝔦 😀', x: 'é\u00e9\u4e2d' }),
      '{"userId":"\\ud835\\udd18"}', // an escaped pair
      '{"userId":"\\uD83D\\uDE00"}', // upper-case hex
      '{"userId":"\ud835\\udd18"}', // a raw high, an escaped low
      '{"userId":"\\ud835\udd18"}', // an escaped high, a raw low
      '{"userId":"\\\\ud800"}', // an escaped backslash followed by "ud800": no escape
      '{"userId":"\\\\\\ud835\\udd18"}', // a backslash, then an escaped pair
      '{"userId":"\\u0041\\u00e9"}',
    ];
    for (const text of ok) {
      expect(unpairedSurrogateAt(text), text).toBe(-1);
      expect(jsonTextShapeError(text), text).toBeUndefined();
    }
    expect(unpairedSurrogateAt('{"userId":"\\\\\\ud800"}')).toBe(13); // a backslash, then a lone escape
  });

  it('agrees with the parsed strings on any generated text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('\ud800', '\udc00', '\\', '"', '𝔘')), { maxLength: 8 }),
        (parts) => {
          const body = { values: parts, [parts.join('')]: 1 };
          const text = JSON.stringify(body);
          const wellFormed = parts.every((p) => p.isWellFormed()) && parts.join('').isWellFormed();
          expect(jsonTextShapeError(text) === undefined, text).toBe(wellFormed);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('costs one native search on a body without escapes, linear time with many', () => {
    const plain = (n: number) => JSON.stringify({ userId: 'u', events: Array.from({ length: n }, (_, i) => ({ eventName: `e${i}`, x: 'é'.repeat(20) })) });
    const escapes = (n: number) =>
      JSON.stringify({ userId: 'u', values: Array.from({ length: n }, () => '\ud835\udd18\u0001'.repeat(10)) }).replace(/𝔘/g, '\\ud835\\udd18');
    expect(costGrowth(plain, (t) => unpairedSurrogateAt(t), 100, 10_000)).toBeLessThan(LINEAR_LIMIT);
    expect(costGrowth(escapes, (t) => unpairedSurrogateAt(t), 100, 10_000)).toBeLessThan(LINEAR_LIMIT);
  });
});

describe('substring rules (CONTAINS, CONTAINS_ANY_OF)', () => {
  it('answers as includes does, for any text and patterns', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'ab', 'ba', 'é', '𝔘'), { maxLength: 60 }).map((a) => a.join(''));
    fc.assert(
      fc.property(text, fc.array(text, { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 400 }), (t, patterns, repeat) => {
        const long = t.repeat(repeat); // long enough to take the automaton
        const matcher = containsAnyMatcher(patterns);
        expect(matcher(t)).toBe(patterns.some((p) => t.includes(p)));
        expect(matcher(long)).toBe(patterns.some((p) => long.includes(p)));
      }),
      { numRuns: 3000 },
    );
  });

  // Text and patterns grow together: includes costs text × pattern length (quadratic, 84 ms and 18 s
  // at the larger sizes here), the automaton text + pattern length (linear).
  it('is linear in text and patterns together (includes took 84 ms and 18 s on the larger of these)', () => {
    const long = (n: number) => ({ text: 'a'.repeat(n), match: containsAnyMatcher([`${'a'.repeat(n / 64)}b${'a'.repeat(n / 64)}`]) });
    expect(costGrowth(long, ({ text, match }) => expect(match(text)).toBe(false), 656, 65_536)).toBeLessThan(LINEAR_LIMIT);
    const many = (n: number) => ({ text: 'v'.repeat(n), match: containsAnyMatcher(Array.from({ length: Math.round(n / 11) }, (_, i) => `v${i}`)) });
    expect(costGrowth(many, ({ text, match }) => expect(match(text)).toBe(false), 656, 65_536)).toBeLessThan(LINEAR_LIMIT);
  });
});
