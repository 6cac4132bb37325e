import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { waitUntil } from '../helpers/context.js';

type Answer = { status: number; body: any };

export interface ReportTraffic {
  treatmentId: string;
  getTreatments(userId: string): Promise<Answer>;
  api(path: string, body: unknown, headers: Record<string, string>): Promise<Answer>;
  mgmt(op: string, body: Record<string, unknown>): Promise<Answer>;
  deliveryKey: string;
  logKey: string;
}

/**
 * The console test's report traffic: users of each group of a treatment with a 50 % holdout ask
 * for it (the holdout bucketing says who is held out), the treated ones view it, some of each
 * group buy; answers the report once it counts them.
 */
export async function driveReportTraffic(o: ReportTraffic): Promise<any> {
  const { treatmentId, getTreatments, api, mgmt, deliveryKey, logKey } = o;
  // The holdout bucketing says who is held out: a few users of each group ask, some convert.
  const held = (userId: string) => createHash('sha256').update(`shop:${treatmentId}:${userId}`).digest().readUInt32BE(0) % 10_000 < 50 * 100;
  const users = Array.from({ length: 60 }, (_, i) => `r${i}`);
  const treated = users.filter((u) => !held(u)).slice(0, 4);
  const holdout = users.filter(held).slice(0, 4);
  for (const u of [...treated, ...holdout]) {
    const r = await getTreatments(u);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((r.body.userTreatments ?? []).length, u).toBe(treated.includes(u) ? 1 : 0);
    if (treated.includes(u)) {
      const viewed = await api(
        '/v1/LogTreatmentInteraction',
        {
          projectId: 'shop',
          userId: u,
          treatmentId,
          treatmentTrackingId: r.body.userTreatments[0].treatmentTrackingId,
          surface: 'home',
          interactionType: 'VIEWED',
          interactionTimeMicros: String(Date.now() * 1000),
        },
        { 'x-api-key': deliveryKey },
      );
      expect(viewed.status, JSON.stringify(viewed.body)).toBe(200);
    }
  }
  await waitUntil(async () => ((await mgmt('ListDecisions', { userId: holdout[3] })).body.decisions ?? []).length > 0, 120_000, 200);
  for (const u of [...treated.slice(0, 3), holdout[0]]) {
    const r = await api(
      '/v1/LogEvents',
      { projectId: 'shop', userId: u, events: [{ eventName: 'purchase', clientEventTimestamp: new Date().toISOString() }] },
      { 'x-api-key': logKey },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  const report = async () => (await mgmt('GetTreatmentReport', { treatmentId })).body.report;
  await waitUntil(
    async () => {
      const r = await report();
      const conversions = (r?.groups ?? []).reduce((n: number, g: { conversions?: number }) => n + (g.conversions ?? 0), 0);
      return conversions >= 4 && r.groups.find((g: { group: string }) => g.group === 'HOLDOUT')?.users >= 4;
    },
    120_000,
    300,
  );
  return report();
}
