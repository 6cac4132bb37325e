/**
 * Service-assigned ids are positive int64 decimal strings. Compared numerically without
 * the precision loss of Number: a longer canonical string is a larger number.
 */
export function compareIds(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}
