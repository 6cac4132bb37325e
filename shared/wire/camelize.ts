/**
 * D1: both camelCase and snake_case field names are accepted on input. Request bodies are
 * rewritten to camelCase before validation. Keys of user-data maps (event and user properties,
 * property filters) are the customer's own names and are kept as sent; their values are
 * PropertyValue objects whose member names are rewritten like any other.
 */
const USER_MAPS = new Set(['eventProperties', 'userProperties', 'propertyValueByPropertyName']);

export function snakeToCamel(key: string): string {
  if (!key.includes('_')) return key;
  return key.replace(/_+([a-zA-Z0-9])/g, (_m, c: string) => c.toUpperCase());
}

export function camelizeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelizeKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const ck = snakeToCamel(k);
    if (USER_MAPS.has(ck) && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const m: Record<string, unknown> = {};
      for (const [mk, mv] of Object.entries(v as Record<string, unknown>)) m[mk] = camelizeKeys(mv);
      out[ck] = m;
    } else {
      out[ck] = camelizeKeys(v);
    }
  }
  return out;
}
