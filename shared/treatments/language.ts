/**
 * Language tags of treatment content and GetTreatments requests.
 * "Supported language code" means a well-formed BCP 47 tag as ICU's `Intl` understands it;
 * tags are stored and compared in their canonical form.
 */

/** `en-us` → `en-US`; null when the tag is not well-formed. Aliases are canonicalised too (`iw` → `he`). */
export function canonicalizeLanguageTag(tag: string): string | null {
  if (typeof tag !== 'string' || tag === '') return null;
  const known = canonicalTags.get(tag);
  if (known !== undefined) return known;
  let canonical: string | null;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    // Intl throws RangeError for tags that are not well-formed; that is the validation.
    canonical = null;
  }
  // Every GetTreatments canonicalises its languageCode: remember the answers (a bounded memo of
  // a pure function; clients send a handful of distinct tags).
  if (canonicalTags.size >= 1024) canonicalTags.clear();
  canonicalTags.set(tag, canonical);
  return canonical;
}

const canonicalTags = new Map<string, string | null>();

/** The primary language subtag: `en-GB` → `en`. */
export function baseLanguage(tag: string): string {
  return tag.split('-', 1)[0].toLowerCase();
}

/**
 * The content language to serve for a request: the exact tag first, then ever shorter
 * prefixes of the request (RFC 4647 lookup), which ends at the base language
 * (`zh-Hant-TW` → `zh-Hant` → `zh`). Content in a more specific tag than the request is never
 * picked (`en` request, only `en-US` content → null). Returns the tag as it appears in `available`.
 */
export function pickContentLanguage(available: string[], requested: string): string | null {
  const byLower = new Map(available.map((tag) => [tag.toLowerCase(), tag]));
  for (let candidate = requested.toLowerCase(); candidate !== ''; candidate = truncateTag(candidate)) {
    const match = byLower.get(candidate);
    if (match !== undefined) return match;
  }
  return null;
}

/** Drops the last subtag, and a singleton (`u`, `x`, ...) left dangling at the end. */
function truncateTag(tag: string): string {
  const subtags = tag.split('-');
  subtags.pop();
  if (subtags.length > 1 && subtags[subtags.length - 1].length === 1) subtags.pop();
  return subtags.join('-');
}
