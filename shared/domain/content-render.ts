/**
 * `treatmentContent` of a delivered treatment (D30): a JSON object string of field name → value
 * with `{{name}}` / `{{name|fallback}}` placeholders filled in from personalisation signals.
 * Values are inserted as they are: the content format belongs to the customer (spec UserTreatment),
 * so escaping, if any, is theirs.
 */
import type { ContentField } from './types.js';

/**
 * `{{ name }}` or `{{ name | fallback }}`. A name starts with a non-space character and holds no
 * braces or `|`; the fallback holds no braces. Anything else (`{{}}`, `{{ }}`) stays literal text.
 */
const PLACEHOLDER_SOURCE = String.raw`\{\{\s*([^{}|\s][^{}|]*?)\s*(?:\|([^{}]*))?\}\}`;

/**
 * Later fields win on a repeated name, so pass language-agnostic fields first and the chosen
 * language's after them. `lookup` gives the contextual attribute or stored property of a name.
 */
export function renderContent(fields: ContentField[], lookup: (name: string) => string | undefined): string {
  // A field list of the compiled catalogue is the same array request after request: it is parsed
  // once into JSON text with holes for its placeholders (the whole text when it has none).
  let template = templates.get(fields);
  if (template === undefined) templates.set(fields, (template = compile(fields)));
  if (typeof template === 'string') return template;
  let out = '{';
  for (const entry of template) {
    out += entry.key;
    if (entry.parts === undefined) {
      out += entry.json;
      continue;
    }
    let value = '';
    for (const part of entry.parts) {
      value += typeof part === 'string' ? part : (lookup(part.name) ?? part.fallback);
    }
    out += JSON.stringify(value);
  }
  return out + '}';
}

/** `"name":` followed by the value's JSON text, or the parts the value is filled from. */
interface TemplateEntry {
  key: string;
  json: string;
  parts?: (string | { name: string; fallback: string })[];
}

const templates = new WeakMap<ContentField[], string | TemplateEntry[]>();

function compile(fields: ContentField[]): string | TemplateEntry[] {
  // a null-prototype object keeps a field named `__proto__` an ordinary key, and its key order
  // is the order JSON.stringify gives the rendered object (integer-like names first)
  const byName: Record<string, string> = Object.create(null);
  for (const field of fields) byName[field.fieldName] = field.stringValue;
  if (!fields.some((f) => f.stringValue.includes('{{'))) return JSON.stringify(byName);
  return Object.keys(byName).map((name, i) => {
    const key = `${i === 0 ? '' : ','}${JSON.stringify(name)}:`;
    const value = byName[name];
    const parts = value.includes('{{') ? templateParts(value) : undefined;
    return parts === undefined ? { key, json: JSON.stringify(value) } : { key, json: '', parts };
  });
}

function templateParts(value: string): TemplateEntry['parts'] {
  const parts: NonNullable<TemplateEntry['parts']> = [];
  let last = 0;
  for (const m of value.matchAll(new RegExp(PLACEHOLDER_SOURCE, 'g'))) {
    if (m.index > last) parts.push(value.slice(last, m.index));
    parts.push({ name: m[1], fallback: m[2]?.trim() ?? '' });
    last = m.index + m[0].length;
  }
  if (parts.length === 0) return undefined;
  if (last < value.length) parts.push(value.slice(last));
  return parts;
}

export function hasPlaceholders(value: string): boolean {
  return value.includes('{{') && new RegExp(PLACEHOLDER_SOURCE).test(value);
}

/** Distinct placeholder names in a value, so a caller knows which user properties to load. */
export function placeholderNames(value: string): string[] {
  if (!value.includes('{{')) return [];
  const names = new Set<string>();
  for (const match of value.matchAll(new RegExp(PLACEHOLDER_SOURCE, 'g'))) names.add(match[1]);
  return [...names];
}
