import type { PropertyValue } from './types.js';

/** The plain JSON value of a PropertyValue: int64 stays a decimal string, timestamps RFC 3339. */
export function plainValue(v: PropertyValue): string | number | boolean {
  if ('longValue' in v) return v.longValue;
  if ('doubleValue' in v) return v.doubleValue;
  if ('stringValue' in v) return v.stringValue;
  if ('booleanValue' in v) return v.booleanValue;
  return v.timestampValue;
}
