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

/** Copy-on-write: a body that is already camelCase is returned as is, with no allocation. */
export function camelizeKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = camelizeKeys(value[i]);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(obj);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const ck = snakeToCamel(k);
    const v = obj[k];
    const cv = USER_MAPS.has(ck) && v !== null && typeof v === 'object' && !Array.isArray(v) ? camelizeMapValues(v as Record<string, unknown>) : camelizeKeys(v);
    if (out === undefined && (ck !== k || cv !== v)) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = obj[keys[j]];
    }
    if (out !== undefined) out[ck] = cv;
  }
  return out ?? obj;
}

/** A user-data map keeps its keys (the customer's names); its values are PropertyValues. */
function camelizeMapValues(map: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(map);
  for (let i = 0; i < keys.length; i++) {
    const v = map[keys[i]];
    const cv = camelizeKeys(v);
    if (out === undefined && cv !== v) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = map[keys[j]];
    }
    if (out !== undefined) out[keys[i]] = cv;
  }
  return out ?? map;
}
