// Shapes of a treatment as the API returns them, and what the console reads off them.

export interface ContentFieldValue {
  fieldName: string;
  stringValue: string;
}
export interface Content {
  contentByLanguage: { languageCode: { languageCode: string }; contentFields: ContentFieldValue[] }[];
  languageAgnosticContentFields: ContentFieldValue[];
}
export interface Rule {
  dataFieldId: string;
  condition: string;
  rhsValue: string;
  dataMissingBehaviour: string;
}
export interface Version {
  versionNumber: number;
  status: string;
  tags: { name: string }[];
  startTimestamp: string;
  endTimestamp?: string;
  content: Content;
  eligibilityRules: { rules: Rule[] };
  removedSurfaces: { surfaces: { name: string }[] };
  targetAction?: { eventId: string };
  publishTime?: string;
  createTime: string;
}
export interface FrequencyCap {
  maxCount: number;
  windowName: string;
  countOf: string;
}
export interface Treatment {
  treatmentId: string;
  name: string;
  description: string;
  status: string;
  treatmentType: { name: string; surfaces: { name: string }[] };
  versions: Version[];
  lastModifiedBy: string;
  lastModifiedTimestamp: string;
  modificationSource: string;
  mutualExclusionGroup?: { name: string };
  holdoutPercentage: number;
  qaUserIds: string[];
  isFallback: boolean;
  frequencyCap?: FrequencyCap;
}

export const newest = (t: Treatment): Version => t.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));

/** The type's surfaces less those the newest version removed. */
export const surfacesOf = (t: Treatment): string[] => {
  const removed = new Set(newest(t).removedSurfaces.surfaces.map((s) => s.name));
  return t.treatmentType.surfaces.map((s) => s.name).filter((s) => !removed.has(s));
};

