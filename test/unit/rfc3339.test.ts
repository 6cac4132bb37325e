import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalRfc3339, parseRfc3339, parseRfc3339Exact } from '../../shared/platform/rfc3339.js';
import { CONSTANT_LIMIT, growth } from '../helpers/complexity.js';

describe('parseRfc3339 (the one parser)', () => {
  it.each([
    ['2024-06-15T11:00:00Z', Date.UTC(2024, 5, 15, 11)],
    ['2024-06-15T11:00:00.25Z', Date.UTC(2024, 5, 15, 11, 0, 0, 250)],
    ['2024-06-15T11:00:00.123456789Z', Date.UTC(2024, 5, 15, 11, 0, 0, 123)],
    ['2024-06-15T13:00:00+02:00', Date.UTC(2024, 5, 15, 11)],
    ['2024-06-15t06:30:00-04:30z'.slice(0, -1), Date.UTC(2024, 5, 15, 11)],
    ['2024-06-15 11:00:00z', Date.UTC(2024, 5, 15, 11)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
    ['0050-01-01T00:00:00Z', -60589296000000],
    ['1969-12-31T23:59:59.999Z', -1],
    ['9999-12-31T23:59:59+23:59', Date.UTC(9999, 11, 31, 23, 59, 59) - (23 * 60 + 59) * 60_000],
  ])('%s', (text, ms) => {
    expect(parseRfc3339(text)).toBe(ms);
  });

  it('keeps sub-millisecond fractions in the exact variant', () => {
    expect(parseRfc3339Exact('2024-06-15T11:00:00.000250Z')! - Date.UTC(2024, 5, 15, 11)).toBeCloseTo(0.25, 6);
    expect(parseRfc3339('2024-06-15T11:00:00.000250Z')).toBe(Date.UTC(2024, 5, 15, 11));
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-00-01T00:00:00Z',
    '2024-01-00T00:00:00Z',
    '2024-06-15T24:00:00Z',
    '2024-06-15T11:60:00Z',
    '2024-06-15T23:59:60Z',
    '2024-06-15T11:00:00+24:00',
    '2024-06-15T11:00:00+02:60',
    '2024-06-15T11:00:00',
    '2024-06-15T11:00:00+0200',
    '2024-06-15T11:00:00.Z',
    '2024-06-15T11:00:00.1234567890Z',
    ' 2024-06-15T11:00:00Z',
    '2024-06-15T11:00:00Z ',
    '2024-06-15',
    '+02024-06-15T11:00:00Z',
    '2024-6-15T11:00:00Z',
    '２０２４-06-15T11:00:00Z',
    'x',
    '',
  ])('rejects %j', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
    expect(canonicalRfc3339(text)).toBeUndefined();
  });

  it('agrees with Date.parse on every valid timestamp', () => {
    const valid = fc
      .record({
        ms: fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9998, 0, 1) }),
        offset: fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        frac: fc.stringMatching(/^[0-9]{0,9}$/),
      })
      .map(({ ms, offset, frac }) => {
        const local = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000).toISOString().slice(0, 19);
        const abs = Math.abs(offset);
        const off = offset === 0 ? 'Z' : `${offset < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
        return `${local}${frac ? `.${frac}` : ''}${off}`;
      });
    fc.assert(
      fc.property(valid, (text) => {
        const ms3 = text.replace(/\.(\d{1,3})\d*/, (_m, d: string) => `.${d.padEnd(3, '0')}`);
        expect(parseRfc3339(text)).toBe(Date.parse(ms3));
      }),
      { numRuns: 2000 },
    );
  });

  it('canonical form: UTC, every fractional digit kept, trailing zeros dropped', () => {
    expect(canonicalRfc3339('2024-01-01T01:00:00.123456+01:00')).toBe('2024-01-01T00:00:00.123456Z');
    expect(canonicalRfc3339('2024-01-01t00:00:00.500z')).toBe('2024-01-01T00:00:00.5Z');
    expect(canonicalRfc3339('2024-01-01T00:00:00.000Z')).toBe('2024-01-01T00:00:00Z');
  });

  it('costs the same on any input (no regular expression to backtrack)', () => {
    const fraction = (n: number) => `2024-06-15T11:00:00.${'1'.repeat(n)}Z`;
    expect(parseRfc3339(fraction(1_000_000))).toBeUndefined();
    // a hundredfold longer input: about 1× for a parser that refuses it at once, 100× for one that scans it
    expect(
      growth(
        fraction,
        (text) => {
          for (let i = 0; i < 1000; i++) parseRfc3339(text);
        },
        10_000,
        1_000_000,
      ),
    ).toBeLessThan(CONSTANT_LIMIT);
  });
});
