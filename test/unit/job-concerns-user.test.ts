import { describe, expect, it } from 'vitest';
import { jobConcernsUser } from '../../shared/profiles/user-deletion.queue.js';

/** DeleteUserData finds a deleted user's ingestion jobs (in flight, kept for retries) by their payloads. */
describe('jobConcernsUser', () => {
  it('finds the ingestion jobs of a user in any payload shape', () => {
    expect(jobConcernsUser({ kind: 'events', projectId: 'p', userId: 'u' }, 'p', 'u')).toBe(true);
    expect(jobConcernsUser({ kind: 'events', projectId: 'p', userId: 'v' }, 'p', 'u')).toBe(false);
    expect(jobConcernsUser({ kind: 'events', projectId: 'q', userId: 'u' }, 'p', 'u')).toBe(false);
    expect(
      jobConcernsUser(
        {
          kind: 'eventsBatch',
          requests: [
            { projectId: 'p', userId: 'v' },
            { projectId: 'p', userId: 'u' },
          ],
        },
        'p',
        'u',
      ),
    ).toBe(true);
    expect(jobConcernsUser({ kind: 'decisions', records: [{ projectId: 'p', userId: 'u', decisions: [] }] }, 'p', 'u')).toBe(true);
    expect(jobConcernsUser({ queue: 'log_events', data: { kind: 'eventsBatch', requests: [{ projectId: 'p', userId: 'u' }] } }, 'p', 'u')).toBe(true);
    expect(jobConcernsUser(null, 'p', 'u')).toBe(false);
  });
});
