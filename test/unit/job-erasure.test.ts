import { namedUsers } from '../../workers/ingestion/dead-letter-sink.js';
import { jobConcernsUser } from '../../shared/profiles/user-deletion.queue.js';
import { describe, expect, it } from 'vitest';
import { jobErasure, type ErasedIds } from '../../shared/profiles/erase-queued-jobs.queue.js';

/** What DeleteUserData does to an ingest job kept for retries: pure, every payload shape. */
const DELETED_AT = 1_000_000;
const e: ErasedIds = { projectId: 'p', userIds: new Set(['u', 'u-temp']), deletedAtMs: DELETED_AT };
const events = (userId: string, receivedAt = DELETED_AT - 1, projectId = 'p') => ({
  kind: 'events',
  projectId,
  userId,
  events: [{ eventName: 'x', clientEventTs: 1, userProperties: { s: { stringValue: 'secret' } } }],
  origin: { source: 'api' },
  receivedAt,
});

describe('jobErasure', () => {
  it('removes a job of one erased user accepted up to the deletion; keeps later ones, other users and other projects', () => {
    expect(jobErasure(events('u'), e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure(events('u-temp'), e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure(events('u', DELETED_AT), e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure(events('u', DELETED_AT + 1), e, 0)).toEqual({ kind: 'keep' });
    expect(jobErasure(events('v'), e, 0)).toEqual({ kind: 'keep' });
    expect(jobErasure(events('u', DELETED_AT - 1, 'q'), e, 0)).toEqual({ kind: 'keep' });
    expect(jobErasure({ kind: 'userAttributes', projectId: 'p', userId: 'u', userProperties: {}, updateTs: 1, messageId: 'm', receivedAt: 5 }, e, 0)).toEqual({
      kind: 'remove',
    });
    expect(jobErasure({ kind: 'interaction', projectId: 'p', userId: 'u', treatmentId: '1', receivedAt: 5 }, e, 0)).toEqual({ kind: 'remove' });
    // an interaction sent without userId names nobody
    expect(jobErasure({ kind: 'interaction', projectId: 'p', userId: '', resolve: true, receivedAt: 5 }, e, 0)).toEqual({ kind: 'keep' });
  });

  it('without an acceptance time, the job’s own creation time counts', () => {
    const { receivedAt: _r, ...old } = events('u');
    expect(jobErasure(old, e, DELETED_AT - 5)).toEqual({ kind: 'remove' });
    expect(jobErasure(old, e, DELETED_AT + 5)).toEqual({ kind: 'keep' });
  });

  it('rewrites a merged job shared with others: the user’s requests keep their index, without events', () => {
    const job = { kind: 'eventsBatch', requests: [events('v'), events('u'), events('w'), events('u', DELETED_AT + 1)] };
    const out = jobErasure(job, e, 0);
    expect(out.kind).toBe('rewrite');
    const requests = (out as { data: { requests: unknown[] } }).data.requests;
    expect(requests).toEqual([
      events('v'),
      { kind: 'events', projectId: 'p', userId: 'u', events: [], origin: { source: 'api' }, receivedAt: DELETED_AT - 1 },
      events('w'),
      events('u', DELETED_AT + 1),
    ]);
    expect(job.requests[1].events).toHaveLength(1); // the input is not changed
    expect(jobErasure({ kind: 'eventsBatch', requests: [events('u'), events('u-temp')] }, e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure({ kind: 'eventsBatch', requests: [events('v')] }, e, 0)).toEqual({ kind: 'keep' });
  });

  it('rewrites a merged interactions job: the user’s interactions keep their index and identity, with nothing of what they did', () => {
    const viewed = (userId: string, receivedAt = DELETED_AT - 1) => ({
      kind: 'interaction',
      projectId: 'p',
      userId,
      treatmentId: '7',
      treatmentTrackingId: '7_secret-response',
      surface: 'home',
      interactionType: 'CLICKED',
      interactionTimeMicros: '123',
      actionName: 'secret',
      receivedAt,
    });
    const job = { kind: 'interactionsBatch', interactions: [viewed('v'), viewed('u'), viewed('u', DELETED_AT + 1)] };
    expect(jobConcernsUser(job, 'p', 'u')).toBe(true);
    expect(jobConcernsUser(job, 'p', 'w')).toBe(false);
    expect(jobErasure(job, e, 0)).toEqual({
      kind: 'rewrite',
      data: {
        kind: 'interactionsBatch',
        interactions: [
          viewed('v'),
          // well-formed, so the tombstone drops it when the job runs (not a dead letter naming the user)
          {
            kind: 'interaction',
            projectId: 'p',
            userId: 'u',
            treatmentId: '',
            treatmentTrackingId: '',
            surface: '',
            interactionType: '',
            interactionTimeMicros: '0',
            receivedAt: DELETED_AT - 1,
          },
          viewed('u', DELETED_AT + 1),
        ],
      },
    });
    expect(job.interactions[1].actionName).toBe('secret'); // the input is not changed
    expect(jobErasure({ kind: 'interactionsBatch', interactions: [viewed('u'), viewed('u-temp')] }, e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure({ kind: 'interactionsBatch', interactions: [viewed('v')] }, e, 0)).toEqual({ kind: 'keep' });
  });

  it('filters a decisions batch by record; an isolated job is judged by the job it wraps', () => {
    const rec = (userId: string, decideTimeMs = DELETED_AT - 1) => ({ projectId: 'p', userId, responseId: `r-${userId}`, decideTimeMs, decisions: [] });
    expect(jobErasure({ kind: 'decisions', records: [rec('v'), rec('u'), rec('u', DELETED_AT + 1)] }, e, 0)).toEqual({
      kind: 'rewrite',
      data: { kind: 'decisions', records: [rec('v'), rec('u', DELETED_AT + 1)] },
    });
    expect(jobErasure({ kind: 'decisions', records: [rec('u')] }, e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure({ queue: 'log_events', data: events('u') }, e, 0)).toEqual({ kind: 'remove' });
    const wrapped = jobErasure({ queue: 'decision_log', data: { kind: 'decisions', records: [rec('v'), rec('u')] } }, e, 0);
    expect(wrapped).toEqual({ kind: 'rewrite', data: { queue: 'decision_log', data: { kind: 'decisions', records: [rec('v')] } } });
    for (const junk of [null, 'x', 5, [], {}, { kind: 'eventsBatch', requests: 'x' }]) expect(jobErasure(junk, e, 0)).toEqual({ kind: 'keep' });
  });

  it("filters a packed decisions batch (the producer's positional records) the same way", () => {
    const rec = (userId: string, decideTimeMs = DELETED_AT - 1) => ['p', userId, `r-${userId}`, decideTimeMs, [['1', 1, 's', 1, 'RETURNED']]];
    expect(jobErasure({ kind: 'decisions', packed: [rec('v'), rec('u'), rec('u', DELETED_AT + 1)] }, e, 0)).toEqual({
      kind: 'rewrite',
      data: { kind: 'decisions', packed: [rec('v'), rec('u', DELETED_AT + 1)] },
    });
    expect(jobErasure({ kind: 'decisions', packed: [rec('u'), rec('u-temp')] }, e, 0)).toEqual({ kind: 'remove' });
    expect(jobErasure({ kind: 'decisions', packed: [rec('v'), 'junk'] }, e, 0)).toEqual({ kind: 'keep' });
    // a dead letter of such a batch names its users, so DeleteUserData finds it
    expect(namedUsers({ kind: 'decisions', packed: [rec('v'), rec('u'), rec('v')] }).sort()).toEqual(['u', 'v']);
    expect(jobConcernsUser({ kind: 'decisions', packed: [rec('v'), rec('u')] }, 'p', 'u')).toBe(true);
    expect(jobConcernsUser({ kind: 'decisions', packed: [rec('v')] }, 'p', 'u')).toBe(false);
  });
});
