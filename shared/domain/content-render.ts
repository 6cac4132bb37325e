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
  // Content without placeholders renders the same for every user: keep it beside the (stable)
  // field list of the compiled catalogue instead of rebuilding it on every request.
  const constant = constantRenders.get(fields);
  if (constant !== undefined) return constant;
  const rendered = render(fields, lookup);
  if (!fields.some((f) => f.stringValue.includes('{{'))) constantRenders.set(fields, rendered);
  return rendered;
}

const constantRenders = new WeakMap<ContentField[], string>();

function render(fields: ContentField[], lookup: (name: string) => string | undefined): string {
  // a null-prototype object keeps a field named `__proto__` an ordinary key
  const content: Record<string, string> = Object.create(null);
  const placeholder = new RegExp(PLACEHOLDER_SOURCE, 'g');
  for (const field of fields) {
    content[field.fieldName] = field.stringValue.includes('{{')
      ? field.stringValue.replace(placeholder, (_match, name: string, fallback: string | undefined) =>
          lookup(name) ?? fallback?.trim() ?? '',
        )
      : field.stringValue;
  }
  return JSON.stringify(content);
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
