// One treatment: its facts, the actions on it, its version history; or its edit form.
import { stamp, v1 } from '../api';
import type { PageProps } from '../page-props';
import type { DataField, EventSchema } from '../catalogue';
import { newest, surfacesOf, type Treatment } from '../treatment';
import { ErrorBanner, formatTime, Loading, StatusBadge, useAction, useLoad } from '../ui';
import { TreatmentForm } from './treatment-form';
import { VersionHistory, VersionView } from './version-history';

export function TreatmentDetail({ session, setSession, navigate, treatmentId, editing, ...rest }: PageProps & { treatmentId: string; editing: boolean }) {
  const one = useLoad(() => v1<{ treatment: Treatment }>(session, 'GetTreatment', { treatmentId }, setSession), [session.projectId, treatmentId, editing]);
  const fields = useLoad(() => v1<{ dataFields: DataField[] }>(session, 'GetAllDataFields', {}, setSession), [session.projectId]);
  const events = useLoad(() => v1<{ eventSchemas: EventSchema[] }>(session, 'GetEventSchemas', {}, setSession), [session.projectId]);
  const act = useAction(async (change: Record<string, unknown>) => {
    await v1(session, 'UpdateTreatment', { treatmentId, ...change, ...stamp(session) }, setSession);
    one.reload();
  });
  if (one.loading && !one.data) return <Loading />;
  if (!one.data) return <ErrorBanner error={one.error} />;
  const t = one.data.treatment;
  if (editing) return <TreatmentForm session={session} setSession={setSession} navigate={navigate} {...rest} existing={t} />;
  const top = newest(t);
  return (
    <>
      <p>
        <a
          href="/console/treatments"
          onClick={(e) => {
            e.preventDefault();
            navigate('treatments');
          }}
        >
          ← All treatments
        </a>
      </p>
      <h2>
        {t.name} <span className="muted">#{t.treatmentId}</span> <StatusBadge status={t.status} />
      </h2>
      {t.description && <p>{t.description}</p>}
      <div className="actions" role="group" aria-label="Treatment actions">
        <button type="button" onClick={() => navigate(`treatments/${t.treatmentId}/edit`)}>
          Edit
        </button>
        {top.status === 'DRAFT' && (
          <button type="button" className="primary" disabled={act.busy} onClick={() => void act.go({ shouldPublish: true })}>
            Publish version {top.versionNumber}
          </button>
        )}
        {t.status === 'LIVE' && (
          <button type="button" disabled={act.busy} onClick={() => void act.go({ shouldPause: true })}>
            Pause
          </button>
        )}
        {t.status === 'PAUSED' && (
          <button type="button" disabled={act.busy} onClick={() => void act.go({ shouldPublish: true })}>
            Resume
          </button>
        )}
        {t.status !== 'ARCHIVED' && (
          <button
            type="button"
            className="danger"
            disabled={act.busy}
            onClick={() => {
              if (window.confirm(`Archive "${t.name}"? It stops being delivered.`)) void act.go({ shouldDelete: true });
            }}
          >
            Archive
          </button>
        )}
        <button type="button" onClick={() => navigate(`inspector?treatment=${t.treatmentId}`)}>
          Preview for a user
        </button>
        <button type="button" onClick={() => navigate(`reports/${t.treatmentId}`)}>
          Report
        </button>
      </div>
      <ErrorBanner error={act.error} />
      <TreatmentFacts treatment={t} events={events.data?.eventSchemas} />
      <VersionHistory treatment={t} />
      <VersionView version={top} fields={fields.data?.dataFields ?? []} />
    </>
  );
}

function TreatmentFacts({ treatment: t, events }: { treatment: Treatment; events: EventSchema[] | undefined }) {
  const top = newest(t);
  return (
    <dl className="facts">
      <dt>Type</dt>
      <dd>{t.treatmentType.name}</dd>
      <dt>Surfaces</dt>
      <dd>{surfacesOf(t).join(', ') || '—'}</dd>
      <dt>Target action</dt>
      <dd>{top.targetAction ? `event ${events?.find((e) => e.eventId === top.targetAction!.eventId)?.eventName ?? ''} #${top.targetAction.eventId}` : '—'}</dd>
      <dt>Holdout</dt>
      <dd>{t.holdoutPercentage}%</dd>
      <dt>QA users</dt>
      <dd>{t.qaUserIds.join(', ') || '—'}</dd>
      <dt>Fallback</dt>
      <dd>{t.isFallback ? 'yes' : 'no'}</dd>
      <dt>Frequency cap</dt>
      <dd>{t.frequencyCap ? `${t.frequencyCap.maxCount} ${t.frequencyCap.countOf} in ${t.frequencyCap.windowName}` : '—'}</dd>
      <dt>Mutual exclusion group</dt>
      <dd>{t.mutualExclusionGroup?.name ?? '—'}</dd>
      <dt>Last change</dt>
      <dd>
        {t.lastModifiedBy}, {formatTime(t.lastModifiedTimestamp)} ({t.modificationSource})
      </dd>
    </dl>
  );
}
