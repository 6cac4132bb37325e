/**
 * `treatmentContent` of a delivered treatment: a JSON object string of field name → value
 * with `{{name}}` / `{{name|fallback}}` placeholders filled in from personalisation signals.
 * Values are inserted as they are: the content format belongs to the customer (spec UserTreatment),
 * so escaping, if any, is theirs.
 */
import type { ContentField } from '../treatments/index.js';

/**
 * `{{ name }}` or `{{ name | fallback }}`. A name starts with a non-space character and holds no
 * braces or `|`; the fallback holds no braces. Anything else (`{{}}`, `{{ }}`) stays literal text.
 * Spaces around the name and the fallback are dropped.
 *
 * Scanned by hand in linear time: the equivalent regular expression
 * `\{\{\s*([^{}|\s][^{}|]*?)\s*(?:\|([^{}]*))?\}\}` backtracks quadratically on an unclosed
 * `{{a` followed by spaces (16,000 spaces took 0.42 s), and every process compiles every stored
 * version.
 */
interface Placeholder {
  /** index of the opening `{{` */
  start: number;
  /** index after the closing `}}` */
  end: number;
  name: string;
  fallback: string;
}

const OPEN = 123; // {
const CLOSE = 125; // }
const PIPE = 124; // |

/**
 * The first placeholder at or after `from`. Inside one, no brace may appear, so a candidate `{{`
 * at p can only close at the first brace after p + 2: each candidate costs the distance to the
 * next brace, and a failed candidate's scan is never repeated (the next candidate starts at or
 * beyond that brace, except p + 1 when the text reads `{{{`, whose scan is empty).
 */
function nextPlaceholder(value: string, from: number): Placeholder | undefined {
  let p = value.indexOf('{{', from);
  while (p >= 0) {
    let q = p + 2;
    let pipe = -1;
    for (; q < value.length; q++) {
      const c = value.charCodeAt(q);
      if (c === OPEN || c === CLOSE) break;
      if (c === PIPE && pipe < 0) pipe = q;
    }
    if (q + 1 < value.length && value.charCodeAt(q) === CLOSE && value.charCodeAt(q + 1) === CLOSE) {
      // trim() and the regular expression's \s agree on what a space is (WhiteSpace and LineTerminator)
      const name = value.slice(p + 2, pipe < 0 ? q : pipe).trim();
      if (name !== '') return { start: p, end: q + 2, name, fallback: pipe < 0 ? '' : value.slice(pipe + 1, q).trim() };
    }
    p = value.indexOf('{{', p + 1);
  }
  return undefined;
}

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
  for (let m = nextPlaceholder(value, 0); m !== undefined; m = nextPlaceholder(value, m.end)) {
    if (m.start > last) parts.push(value.slice(last, m.start));
    parts.push({ name: m.name, fallback: m.fallback });
    last = m.end;
  }
  if (parts.length === 0) return undefined;
  if (last < value.length) parts.push(value.slice(last));
  return parts;
}

export function hasPlaceholders(value: string): boolean {
  return value.includes('{{') && nextPlaceholder(value, 0) !== undefined;
}

/** Distinct placeholder names in a value, so a caller knows which user properties to load. */
export function placeholderNames(value: string): string[] {
  if (!value.includes('{{')) return [];
  const names = new Set<string>();
  for (let m = nextPlaceholder(value, 0); m !== undefined; m = nextPlaceholder(value, m.end)) names.add(m.name);
  return [...names];
}
