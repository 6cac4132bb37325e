/**
 * A GetTreatments request checked and normalised before any Redis call: its
 * language, contextual attributes and surfaces with their counts; every problem is one 400 with
 * all the details.
 */
import { InvalidArgumentError, type ErrorDetail } from '../platform/errors.js';
import { servedPlannedVersion, type CatalogPlan, type PlannedTreatment } from './catalog-plan.js';
import { ruleValueFromContextualAttribute } from '../rules/index.js';
import type { ContextualAttribute, DeliveryRequest } from './delivery.schemas.js';

import { canonicalizeLanguageTag } from '../treatments/index.js';

export const DEFAULT_LANGUAGE = 'en';
/** A surface's maximum when neither it nor the request sets one. */
export const DEFAULT_MAXIMUM_TREATMENT_COUNT = 1;

const ATTRIBUTE_VALUE_KEYS = ['stringValue', 'integerValue', 'doubleValue', 'boolValue', 'booleanValue', 'timestampValue', 'timestampMicrosValue'] as const;

// ---------------------------------------------------------------------------------------------
// Validation (400s: language, contextual attributes, surfaces and counts)

export interface PreparedSurface {
  name: string;
  max: number;
  min: number;
}

export interface PreparedRequest {
  projectId: string;
  userId: string;
  /** canonical BCP 47 tag */
  language: string;
  attributes: ReadonlyMap<string, ContextualAttribute>;
  surfaces: PreparedSurface[];
}

/** Checks everything that does not depend on the user; every problem is reported in one 400. */
export function prepareRequest(plan: CatalogPlan, request: DeliveryRequest): PreparedRequest {
  const problems: ErrorDetail[] = [];
  const language = prepareLanguage(request.languageCode, problems);
  const attributes = prepareAttributes(request.contextualAttributes ?? [], problems);
  const surfaces = prepareSurfaces(plan, request, problems);
  if (problems.length > 0)
    throw new InvalidArgumentError(`invalid GetTreatments request: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  return { projectId: request.projectId, userId: request.userId, language, attributes, surfaces };
}

/** An empty string is what an encoder sends for an unset field: it means the default, `en`. */
export function prepareLanguage(code: string | undefined, problems: ErrorDetail[]): string {
  if (code === undefined || code === '') return DEFAULT_LANGUAGE;
  const canonical = canonicalizeLanguageTag(code);
  if (canonical === null) problems.push({ field: 'languageCode', description: `"${code}" is not a well-formed BCP 47 language tag` });
  return canonical ?? DEFAULT_LANGUAGE;
}

export function prepareAttributes(list: ContextualAttribute[], problems: ErrorDetail[]): Map<string, ContextualAttribute> {
  const attributes = new Map<string, ContextualAttribute>();
  list.forEach((attr, i) => {
    const path = `contextualAttributes[${i}]`;
    if (attributes.has(attr.key)) {
      problems.push({ field: `${path}.key`, description: `key "${attr.key}" is given more than once` });
      return;
    }
    attributes.set(attr.key, attr);
    const set = ATTRIBUTE_VALUE_KEYS.filter((k) => attr[k] !== undefined);
    if (set.length !== 1) {
      const description =
        set.length === 0
          ? `needs exactly one value (one of ${ATTRIBUTE_VALUE_KEYS.join(', ')})`
          : `has ${set.length} values (${set.join(', ')}); give exactly one`;
      problems.push({ field: path, description });
    } else if (ruleValueFromContextualAttribute(attr) === undefined) {
      problems.push({ field: `${path}.${set[0]}`, description: 'is not a valid value of its kind' });
    }
  });
  return attributes;
}

function prepareSurfaces(plan: CatalogPlan, request: DeliveryRequest, problems: ErrorDetail[]): PreparedSurface[] {
  if (request.surfaces.length === 0) problems.push({ field: 'surfaces', description: 'at least one surface is required' });
  const defaultMax = countOf('maximumTreatmentCount', request.maximumTreatmentCount, DEFAULT_MAXIMUM_TREATMENT_COUNT, problems);
  const seen = new Set<string>();
  return request.surfaces.map((s, i) => {
    const path = `surfaces[${i}]`;
    if (!plan.surfaces.has(s.surface)) problems.push({ field: `${path}.surface`, description: `surface "${s.surface}" is not registered in this project` });
    else if (seen.has(s.surface)) problems.push({ field: `${path}.surface`, description: `surface "${s.surface}" is requested more than once` });
    seen.add(s.surface);
    const max = countOf(`${path}.maximumTreatmentCount`, s.maximumTreatmentCount, defaultMax, problems);
    const min = countOf(`${path}.minimumTreatmentCount`, s.minimumTreatmentCount, 0, problems);
    if (min > max)
      problems.push({
        field: `${path}.minimumTreatmentCount`,
        description: `${min} exceeds the surface's maximum of ${max}, so the surface could never be filled`,
      });
    return { name: s.surface, max, min };
  });
}

/** A non-negative int64; beyond 2^53 it cannot be told apart from "unlimited" anyway. */
function countOf(field: string, raw: number | string | undefined, dflt: number, problems: ErrorDetail[]): number {
  if (raw === undefined) return dflt;
  const valid = typeof raw === 'number' ? Number.isInteger(raw) : /^[+-]?\d+$/.test(raw.trim());
  if (!valid) {
    problems.push({ field, description: 'must be an integer' });
    return dflt;
  }
  const n = BigInt(typeof raw === 'number' ? raw : raw.trim());
  if (n < 0n) {
    problems.push({ field, description: 'must not be negative' });
    return dflt;
  }
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}

/**
 * False when no treatment that could be served on the requested surfaces has rules or
 * placeholders: the caller may then skip reading the profile.
 */
export function requestNeedsProfile(plan: CatalogPlan, prepared: PreparedRequest, nowMs: number): boolean {
  const needs = (t: PlannedTreatment) => t.cap !== undefined || servedPlannedVersion(t, nowMs)?.needsProfile === true;
  if (plan.qaByUser.get(prepared.userId)?.some((t) => t.newestVersion?.needsProfile === true)) return true;
  return prepared.surfaces.some((s) => (plan.bySurface.get(s.name) ?? []).some(needs) || (plan.fallbacksBySurface.get(s.name) ?? []).some(needs));
}
