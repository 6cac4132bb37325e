import { admin } from '../api';
import type { PageProps } from '../App';
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
    return (
      <Empty>
        The queues, dead letters and change log are operator views: sign in with the admin token to see them.
      </Empty>
    );
  }
  return <AdminOperations session={session} />;
}

function AdminOperations({ session }: Pick<PageProps, 'session'>) {
  const changes = useLoad(() => admin<{ changes: Change[] }>(session, 'ListChanges', { projectId: session.projectId, pageSize: 50 }), [session.projectId]);
  const dead = useLoad(() => admin<{ deadLetters: DeadLetter[] }>(session, 'ListDeadLetters', { projectId: session.projectId, pageSize: 50 }), [session.projectId]);
  return (
    <>
      <section aria-labelledby="queues-h">
        <h2 id="queues-h">Queues</h2>
        <p>
          Backlog, failed jobs with their reasons and retries are on the{' '}
          <a href="/admin/queues" target="_blank" rel="noreferrer">
            queue dashboard (opens in a new tab; the browser asks for the admin token as the password)
          </a>
          .
        </p>
      </section>
      <section aria-labelledby="dead-h">
        <h2 id="dead-h">Dead letters of {session.projectId}</h2>
        {dead.loading && !dead.data && <Loading />}
        <ErrorBanner error={dead.error} />
        {dead.data?.deadLetters.length === 0 && <Empty>No dead letter: everything was ingested.</Empty>}
        {!!dead.data?.deadLetters.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead><tr><th scope="col">Received</th><th scope="col">Source</th><th scope="col">Type</th><th scope="col">Reason</th></tr></thead>
              <tbody>
                {dead.data.deadLetters.map((d) => (
                  <tr key={d.messageId}><td>{formatTime(d.receiveTime)}</td><td>{d.source}</td><td>{d.dataType}</td><td>{d.reason}</td></tr>
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
              <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Operation</th><th scope="col">Resource</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
              <tbody>
                {changes.data.changes.map((c) => (
                  <tr key={c.changeId}>
                    <td className="nowrap">{formatTime(c.time)}</td>
                    <td>{c.actor}</td>
                    <td>{c.operation}</td>
                    <td>{c.resourceKind} {c.resourceId}</td>
                    <td><code>{brief(c.before)}</code></td>
                    <td><code>{brief(c.after)}</code></td>
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
