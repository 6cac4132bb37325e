import { describe, expect, it } from 'vitest';
import { plannedTreatmentStatus, servedPlannedVersion } from '../../shared/delivery/catalog-plan.js';
import { servedVersion, treatmentStatus } from '../../shared/treatments/treatment-status.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { NOW, HOUR, iso, content, treatment, plan, fixed, run, returned, explain, explained } from '../helpers/delivery-plan.js';

/** Delivery's response: its shape, counts, once per response, mutual exclusion and which statuses are served. */
describe('the response', () => {
  it('renders a UserTreatment with rank, tracking id, type name, language and a JSON content string', () => {
    const r = run(plan([treatment('7')]));
    expect(r.response).toEqual({
      responseId: 'resp1',
      userTreatments: [
        {
          treatmentId: '7',
          treatmentTrackingId: '7_resp1',
          surface: 'home',
          rank: '1',
          treatmentType: 'banner',
          treatmentContent: JSON.stringify({ link: 'https://x/1', title: 'Hello' }),
          contentLanguageCode: 'en',
        },
      ],
    });
  });

  it('holds only responseId, with no userTreatments key, when nothing qualifies', () => {
    const r = run(plan([treatment('7')]), { languageCode: 'fr' });
    expect(r.response).toEqual({ responseId: 'resp1' });
    expect('userTreatments' in r.response).toBe(false);
  });
});

describe('treatment counts per surface', () => {
  const three = plan([treatment('1'), treatment('2'), treatment('3')]);
  const ranking = fixed({ '1': 0.2, '2': 0.9, '3': 0.5 });

  it('returns one treatment per surface by default: the best ranked', () => {
    expect(returned(three, {}, { ranking })).toEqual(['home:2']);
  });

  it('uses the top-level maximumTreatmentCount as every surface’s default, ranks 1..n in score order', () => {
    const r = run(three, { maximumTreatmentCount: 2, surfaces: [{ surface: 'home' }] }, { ranking });
    expect(r.response.userTreatments!.map((u) => [u.treatmentId, u.rank])).toEqual([
      ['2', '1'],
      ['3', '2'],
    ]);
  });

  it('lets a surface’s own maximum override the top-level one (int64 strings accepted)', () => {
    expect(returned(three, { maximumTreatmentCount: 1, surfaces: [{ surface: 'home', maximumTreatmentCount: '3' }] }, { ranking })).toEqual([
      'home:2',
      'home:3',
      'home:1',
    ]);
    expect(returned(three, { maximumTreatmentCount: 3, surfaces: [{ surface: 'home', maximumTreatmentCount: 0 }] }, { ranking })).toEqual([]);
  });

  it('gives a surface none at all when fewer than its minimum qualify, and does not affect other surfaces', () => {
    const p = plan([treatment('1'), treatment('2'), treatment('5', '2')]);
    const r = { surfaces: [{ surface: 'home', maximumTreatmentCount: 5, minimumTreatmentCount: 3 }, { surface: 'checkout' }] };
    expect(returned(p, r)).toEqual(['checkout:5']);
    expect(explained(p, 'home', '1', r).reasons).toEqual(['MINIMUM_COUNT_NOT_MET']);
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 5, minimumTreatmentCount: 2 }] })).toEqual(['home:1', 'home:2']);
  });

  it('reports the treatments cut by the maximum', () => {
    expect(explained(three, 'home', '1', {}, { ranking }).reasons).toEqual(['MAXIMUM_COUNT_REACHED']);
  });
});

describe('once per response and mutual exclusion', () => {
  it('returns a treatment only on the first requested surface where it is returned', () => {
    // both banner treatments are on home and inbox
    const p = plan([treatment('1'), treatment('2')]);
    const ranking = fixed({ '1': 0.9, '2': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'inbox' }, { surface: 'home' }] }, { ranking })).toEqual(['inbox:1', 'home:2']);
    const e = explained(p, 'home', '1', { surfaces: [{ surface: 'inbox' }, { surface: 'home' }] }, { ranking });
    expect(e).toMatchObject({ returned: false, reasons: ['RETURNED_ON_EARLIER_SURFACE'], blockedBy: 'inbox' });
  });

  it('lets a treatment cut by the maximum on one surface be returned on a later one', () => {
    const p = plan([treatment('1'), treatment('2')]);
    const ranking = fixed({ '1': 0.9, '2': 0.5 });
    expect(returned(p, { surfaces: [{ surface: 'home' }, { surface: 'inbox' }] }, { ranking })).toEqual(['home:1', 'inbox:2']);
  });

  it('returns at most one treatment of a group: the best ranked', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('2', '1', { group: 'g' }), treatment('3')]);
    const ranking = fixed({ '1': 0.3, '2': 0.8, '3': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] }, { ranking })).toEqual(['home:2', 'home:3']);
    expect(explained(p, 'home', '1', { surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }] }, { ranking })).toMatchObject({
      reasons: ['MUTUAL_EXCLUSION'],
      blockedBy: '2',
    });
  });

  it('keeps a group taken on an earlier surface taken on later ones', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('5', '2', { group: 'g' }), treatment('6', '2')]);
    const ranking = fixed({ '5': 0.9, '6': 0.1 });
    expect(returned(p, { surfaces: [{ surface: 'home' }, { surface: 'checkout' }] }, { ranking })).toEqual(['home:1', 'checkout:6']);
  });

  it('does not let a group member that is not returned (minimum not met) block the group', () => {
    const p = plan([treatment('1', '1', { group: 'g' }), treatment('5', '2', { group: 'g' })]);
    const r = { surfaces: [{ surface: 'home', maximumTreatmentCount: 2, minimumTreatmentCount: 2 }, { surface: 'checkout' }] };
    expect(returned(p, r)).toEqual(['checkout:5']);
  });
});

describe('status: only LIVE treatments are served', () => {
  const p = plan([
    treatment('1', '1', { paused: true }),
    treatment('2', '1', { versions: [{ publishTime: undefined }] }),
    treatment('3', '1', { versions: [{ startTimestamp: iso(NOW + HOUR) }] }),
    treatment('4', '1', { versions: [{ endTimestamp: iso(NOW - HOUR) }] }),
  ]);

  it('never serves paused, draft, scheduled or archived treatments', () => {
    expect(returned(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 10 }] })).toEqual([]);
    const e = explain(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 10 }] }).surfaces[0].treatments;
    expect(e.map((t) => [t.treatmentId, t.status, t.reasons])).toEqual([
      ['1', 'PAUSED', ['NOT_LIVE']],
      ['2', 'DRAFT', ['NOT_LIVE']],
      ['3', 'SCHEDULED', ['NOT_LIVE']],
      ['4', 'ARCHIVED', ['NOT_LIVE']],
    ]);
  });

  it('serves a scheduled treatment once its start passes and stops at its end, with the same plan', () => {
    const q = plan([treatment('3', '1', { versions: [{ startTimestamp: iso(NOW + HOUR), endTimestamp: iso(NOW + 2 * HOUR) }] })]);
    expect(returned(q, {}, { now: NOW + HOUR - 1 })).toEqual([]);
    expect(returned(q, {}, { now: NOW + HOUR })).toEqual(['home:3']);
    expect(returned(q, {}, { now: NOW + 2 * HOUR })).toEqual([]);
  });

  it('serves the latest published LIVE version, never a newer draft', () => {
    const q = plan([
      treatment('1', '1', {
        versions: [
          { publishTime: iso(NOW - 2 * HOUR), content: content({ en: 'old' }) },
          { publishTime: iso(NOW - HOUR), content: content({ en: 'new' }) },
          { publishTime: undefined, content: content({ en: 'draft' }) },
        ],
      }),
    ]);
    expect(JSON.parse(run(q).response.userTreatments![0].treatmentContent).title).toBe('new');
    expect(explained(q, 'home', '1').servedVersionNumber).toBe(2);
  });

  it('derives status and the served version exactly as treatment-status.ts does, at any time', () => {
    const records = [
      treatment('1', '1', { paused: true }),
      treatment('2', '1', { versions: [{ publishTime: undefined }] }),
      treatment('3', '1', {
        versions: [{ startTimestamp: iso(NOW + HOUR) }, { publishTime: iso(NOW), startTimestamp: iso(NOW - HOUR), endTimestamp: iso(NOW + 3 * HOUR) }],
      }),
      treatment('4', '1', { versions: [{ endTimestamp: iso(NOW - HOUR) }, { publishTime: undefined }] }),
      treatment('5', '1', { versions: [{ publishTime: iso(NOW), startTimestamp: iso(NOW + HOUR), endTimestamp: iso(NOW - HOUR) }] }),
      treatment('6', '1', { versions: [] }),
    ];
    const q = plan(records);
    for (const at of [NOW - 3 * HOUR, NOW - HOUR, NOW, NOW + HOUR, NOW + 2 * HOUR, NOW + 4 * HOUR]) {
      records.forEach((r, i) => {
        expect(plannedTreatmentStatus(q.treatments[i], at)).toBe(treatmentStatus(r, at));
        expect(servedPlannedVersion(q.treatments[i], at)?.versionNumber).toBe(servedVersion(r, at)?.versionNumber);
      });
    }
  });
});

describe('delivery picks in rank order without sorting every candidate', () => {
  it('reaches the explanation’s fully sorted answer on random catalogues (groups, ties, maximums, minimums, several surfaces)', () => {
    const random = seededRandom(11);
    const int = (n: number) => Math.floor(random() * n);
    let returnedSomething = 0;
    for (let round = 0; round < 200; round++) {
      const treatments = Array.from({ length: 2 + int(20) }, (_, i) =>
        treatment(String(i + 1), String(1 + int(2)), int(3) === 0 ? { group: `g${int(3)}` } : {}),
      );
      // few distinct scores: ties, broken by id, are common
      const scores = Object.fromEntries(treatments.map((t) => [t.treatmentId, int(4) / 4]));
      const surfaces = ['home', 'inbox', 'checkout']
        .filter(() => random() < 0.7)
        .map((surface) => ({ surface, maximumTreatmentCount: 1 + int(5), ...(int(4) === 0 ? { minimumTreatmentCount: 1 + int(3) } : {}) }))
        .filter((s) => (s.minimumTreatmentCount ?? 0) <= s.maximumTreatmentCount);
      if (surfaces.length === 0) continue;
      // run() compares delivery with the explanation's path, which sorts every candidate
      const got = returned(plan(treatments), { surfaces }, { ranking: fixed(scores) });
      if (got.length > 0) returnedSomething++;
    }
    expect(returnedSomething).toBeGreaterThan(100);
  });
});
