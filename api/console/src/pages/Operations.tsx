import { admin } from '../api';
import type { PageProps } from '../page-props';
import { Empty, ErrorBanner, formatTime, Loading, useLoad } from '../ui';

interface Change {
  changeId: string;
  time: string;
  actor: string;
  operation: string;
  resourceKind: string;
  resourceId: string;
  before: unknown;
  after: unknown;
}
interface QueueStats {
  queue: string;
  waiting: number;
  active: number;
  delayed: number;
  prioritized: number;
  failed: number;
  completed: number;
  oldestWaitingSeconds: number;
}
interface QueueReport {
  queues: QueueStats[];
  ingestBacklog: { events: number; limit: number };
}
interface DeadLetter {
  messageId: string;
  source: string;
  reason: string;
  receiveTime: string;
  dataType: string;
}

function brief(v: unknown): string {
  if (v === null || v === undefined) return '—';
  const s = JSON.stringify(v);
  return s.length > 200 ? `${s.slice(0, 197)}…` : s;
}

export function OperationsPage({ session }: PageProps) {
  if (session.mode !== 'admin') {
    return <Empty>The queues, dead letters and change log are operator views: sign in with the admin token to see them.</Empty>;
  }
  return <AdminOperations session={session} />;
}

function AdminOperations({ session }: Pick<PageProps, 'session'>) {
  const changes = useLoad(() => admin<{ changes: Change[] }>(session, 'ListChanges', { projectId: session.projectId, pageSize: 50 }), [session.projectId]);
  const dead = useLoad(
    () => admin<{ deadLetters: DeadLetter[] }>(session, 'ListDeadLetters', { projectId: session.projectId, pageSize: 50 }),
    [session.projectId],
  );
  return (
    <>
      <QueuesSection session={session} />
      <section aria-labelledby="dead-h">
        <h2 id="dead-h">Dead letters of {session.projectId}</h2>
        {dead.loading && !dead.data && <Loading />}
        <ErrorBanner error={dead.error} />
        {dead.data?.deadLetters.length === 0 && <Empty>No dead letter: everything was ingested.</Empty>}
        {!!dead.data?.deadLetters.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead>
                <tr>
                  <th scope="col">Received</th>
                  <th scope="col">Source</th>
                  <th scope="col">Type</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {dead.data.deadLetters.map((d) => (
                  <tr key={d.messageId}>
                    <td>{formatTime(d.receiveTime)}</td>
                    <td>{d.source}</td>
                    <td>{d.dataType}</td>
                    <td>{d.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="changes-h">
        <h2 id="changes-h">Change log of {session.projectId}</h2>
        {changes.loading && !changes.data && <Loading />}
        <ErrorBanner error={changes.error} />
        {changes.data?.changes.length === 0 && <Empty>No change recorded yet.</Empty>}
        {!!changes.data?.changes.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Operation</th>
                  <th scope="col">Resource</th>
                  <th scope="col">Before</th>
                  <th scope="col">After</th>
                </tr>
              </thead>
              <tbody>
                {changes.data.changes.map((c) => (
                  <tr key={c.changeId}>
                    <td className="nowrap">{formatTime(c.time)}</td>
                    <td>{c.actor}</td>
                    <td>{c.operation}</td>
                    <td>
                      {c.resourceKind} {c.resourceId}
                    </td>
                    <td>
                      <code>{brief(c.before)}</code>
                    </td>
                    <td>
                      <code>{brief(c.after)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}

function age(seconds: number): string {
  if (seconds < 1) return '—';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** The backlog of every queue (the deployment's, not a project's) and ingestion against its limit. */
function QueuesSection({ session }: Pick<PageProps, 'session'>) {
  const stats = useLoad(() => admin<QueueReport>(session, 'GetQueueStats', {}), []);
  const backlog = stats.data?.ingestBacklog;
  return (
    <section aria-labelledby="queues-h">
      <h2 id="queues-h">Queue backlog (every project)</h2>
      {stats.loading && !stats.data && <Loading />}
      <ErrorBanner error={stats.error} />
      {backlog && (
        <p data-testid="ingest-backlog">
          Ingestion backlog: <strong>{backlog.events.toLocaleString('en')}</strong> events of the {backlog.limit.toLocaleString('en')} beyond which LogEvents
          answers 429.
        </p>
      )}
      {stats.data && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Queues, scrolls sideways on narrow screens">
          <table data-testid="queue-stats">
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Waiting</th>
                <th scope="col">Active</th>
                <th scope="col">Delayed</th>
                <th scope="col">Prioritized</th>
                <th scope="col">Failed</th>
                <th scope="col">Completed</th>
                <th scope="col">Oldest waiting</th>
              </tr>
            </thead>
            <tbody>
              {stats.data.queues.map((q) => (
                <tr key={q.queue}>
                  <th scope="row">{q.queue}</th>
                  <td>{q.waiting}</td>
                  <td>{q.active}</td>
                  <td>{q.delayed}</td>
                  <td>{q.prioritized}</td>
                  <td>{q.failed}</td>
                  <td>{q.completed}</td>
                  <td>{age(q.oldestWaitingSeconds)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="actions">
        <button type="button" onClick={stats.reload} disabled={stats.loading}>
          Refresh
        </button>
      </div>
      <p>
        Failed jobs with their reasons, and retries, are on the{' '}
        <a href="/admin/queues" target="_blank" rel="noreferrer">
          queue dashboard (opens in a new tab; the browser asks for the admin token as the password)
        </a>
        .
      </p>
    </section>
  );
}
