// Shapes of a treatment as the API returns them (the client's wire types, generated from the
// service's own schemas), and what the console reads off them.
import type { GetAllTreatmentsResponse } from '../../../client/src/wire.generated.js';

/** A treatment as a management key reads it (GetAllTreatments, GetTreatment): the whole record. */
export type Treatment = GetAllTreatmentsResponse['treatments'][number];
export type Version = Treatment['versions'][number];
export type Content = Version['content'];
export type ContentFieldValue = Content['languageAgnosticContentFields'][number];
export type Rule = Version['eligibilityRules']['rules'][number];
export type FrequencyCap = NonNullable<Treatment['frequencyCap']>;

export const newest = (t: Treatment): Version => t.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));

/** The type's surfaces less those the newest version removed. */
export const surfacesOf = (t: Treatment): string[] => {
  const removed = new Set(newest(t).removedSurfaces.surfaces.map((s) => s.name));
  return t.treatmentType.surfaces.map((s) => s.name).filter((s) => !removed.has(s));
};
