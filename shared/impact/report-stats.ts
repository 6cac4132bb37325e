/**
 * Treatment report statistics, pure: conversion rates per group and the uplift of TREATED over HOLDOUT as a
 * difference of proportions with a normal-approximation (Wald) 95 % interval.
 */
export interface GroupCounts {
  group: 'TREATED' | 'HOLDOUT';
  users: number;
  impressions: number;
  clicks: number;
  conversions: number;
}

export interface Uplift {
  /** p(TREATED) − p(HOLDOUT) */
  absolute: number;
  /** absolute / p(HOLDOUT); absent when no holdout user converted (division by zero) */
  relative?: number;
  confidenceInterval95: { low: number; high: number };
}

/** z of the two-sided 95 % interval. */
export const Z95 = 1.959963984540054;

export function conversionRate(g: GroupCounts): number | undefined {
  return g.users > 0 ? g.conversions / g.users : undefined;
}

/** Undefined unless both groups have users. */
export function upliftOf(treated: GroupCounts, holdout: GroupCounts): Uplift | undefined {
  if (treated.users === 0 || holdout.users === 0) return undefined;
  const p1 = treated.conversions / treated.users;
  const p0 = holdout.conversions / holdout.users;
  const absolute = p1 - p0;
  const se = Math.sqrt((p1 * (1 - p1)) / treated.users + (p0 * (1 - p0)) / holdout.users);
  const out: Uplift = { absolute, confidenceInterval95: { low: absolute - Z95 * se, high: absolute + Z95 * se } };
  if (p0 > 0) out.relative = absolute / p0;
  return out;
}
