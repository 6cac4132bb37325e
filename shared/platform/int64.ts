import { invalidField } from './errors.js';

/** Normalises an int64 input (number or decimal string) to its canonical decimal string. */
export function int64String(field: string, value: number | string): string {
  // A JSON number beyond 2^53 has already lost digits in the parser: refuse it rather than store a rounded id.
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw invalidField(field, 'expected an int64; send large values as decimal strings');
  let n: bigint;
  try {
    n = BigInt(value);
  } catch {
    throw invalidField(field, 'expected an int64');
  }
  if (n > 9223372036854775807n || n < -9223372036854775808n) throw invalidField(field, 'out of the int64 range');
  return n.toString();
}
