import { describe, expect, it } from 'vitest';
import { loadTargetActionCatalog, type TargetActionSources } from '../../workers/delivery/target-action-cache.js';
import { eventTimesByTreatment } from '../../workers/delivery/target-action-conversions.js';
import type { TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';

const version = (versionNumber: number, targetActionEventId?: string) =>
  ({ versionNumber, ...(targetActionEventId ? { targetActionEventId } : {}) }) as TreatmentVersionRecord;
const treatment = (treatmentId: string, versions: TreatmentVersionRecord[]) => ({ treatmentId, versions }) as TreatmentRecord;

const sources: TargetActionSources = {
  treatments: async () => [
    treatment('1', [version(1, '10')]),
    treatment('2', [version(1, '10'), version(2, '11')]),
    treatment('3', [version(1, '11'), version(2)]),
    treatment('4', [version(1, '99')]),
    treatment('5', [version(1, '10')]),
  ],
  surfaces: async () => new Set(['home']),
  eventName: async (_p, id) => ({ '10': 'purchase', '11': 'signup' })[id],
};

describe('target-action catalogue', () => {
  it('maps each event name to the treatments whose newest version targets it; unknown schemas map nothing', async () => {
    const c = await loadTargetActionCatalog(sources, 'p');
    expect(Object.fromEntries(c.treatmentsByEvent)).toEqual({ purchase: ['1', '5'], signup: ['2'] });
    expect([...c.targeted].sort()).toEqual(['1', '2', '5']);
    expect([...c.surfaces]).toEqual(['home']);
  });

  it('groups the distinct times of a job’s target events per treatment', async () => {
    const c = await loadTargetActionCatalog(sources, 'p');
    const events = [
      { eventName: 'purchase', clientEventTs: 5 },
      { eventName: 'purchase', clientEventTs: 5 },
      { eventName: 'signup', clientEventTs: 6 },
      { eventName: 'other', clientEventTs: 7 },
      { eventName: 'purchase', clientEventTs: 8 },
    ];
    expect(Object.fromEntries(eventTimesByTreatment(c, events))).toEqual({ '1': [5, 8], '5': [5, 8], '2': [6] });
  });
});
