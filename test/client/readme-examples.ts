import { readFileSync } from 'node:fs';
import type { ManagementClient } from '../../client/src/management.js';

/**
 * The code blocks of the README's "Calling the service" section (and of docs/client.md), so the
 * tests run exactly what a reader copies. `lang` is the fence's language (`ts`, `html`).
 */
export function readmeBlocks(lang: string, file = 'README.md', section = '## Calling the service'): string[] {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
  const start = section ? text.indexOf(section) : 0;
  if (start < 0) throw new Error(`${file} has no section "${section}"`);
  const next = section ? text.indexOf('\n## ', start + section.length) : -1;
  const body = text.slice(start, next < 0 ? undefined : next);
  return [...body.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
}

/** The README's address of the service (the curl tour's) replaced by a test service's. */
export function pointedAt(code: string, baseUrl: string): string {
  if (!code.includes('http://127.0.0.1:8080')) throw new Error('the example no longer names http://127.0.0.1:8080');
  return code.replaceAll('http://127.0.0.1:8080', baseUrl);
}

/**
 * These tests call the service as a page or a script would, one call at a time, and assert its
 * answers: load shedding (OVERLOAD_MAX_LAG_MS, where the service has it) would refuse some of them
 * whenever the shared test machine lags, which is not what they are about.
 */
export const NO_LOAD_SHEDDING: Record<string, string> = { OVERLOAD_MAX_LAG_MS: '0', OVERLOAD_MAX_IN_FLIGHT: '0' };

/** What the README's client examples expect of the project: the surface home_banner and a live treatment on it. */
export async function seedReadmeCatalogue(mgmt: ManagementClient): Promise<void> {
  await mgmt.insertSurface({ name: 'home_banner' });
  await mgmt.insertTreatmentType({
    treatmentTypeName: 'banner',
    lastModifiedBy: 'me',
    surfaces: [{ surfaceName: 'home_banner' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 80, isPerLanguage: true }],
  });
  await mgmt.insertTreatment({
    name: 'gold offer',
    description: 'd',
    treatmentTypeName: 'banner',
    lastModifiedBy: 'me',
    startTimestamp: '2026-01-01T00:00:00Z',
    shouldPublish: true,
    content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'Hi {{name|friend}}' }] }] },
  });
}
