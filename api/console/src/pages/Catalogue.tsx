import { useEffect } from 'react';
import { v1 } from '../api';
import type { PageProps } from '../page-props';
import { describeField, fieldType, type DataField, type EventSchema, type MutualExclusionGroup, type Surface, type TreatmentType } from '../catalogue';
import { Empty, ErrorBanner, formatTime, Loading, useLoad } from '../ui';
import { NewAggregation, NewEventSchema, NewSurface, NewType, NewUserProperty } from './catalogue-forms';
import type { Treatment } from '../treatment';

const BACKFILL: Record<NonNullable<DataField['backfillStatus']>, { text: string; className: string }> = {
  NOT_APPLICABLE: { text: 'none needed', className: '' },
  PENDING: { text: 'pending', className: 'status-scheduled' },
  RUNNING: { text: 'running', className: 'status-paused' },
  COMPLETE: { text: 'complete', className: 'ok' },
  FAILED: { text: 'failed', className: 'no' },
};

/** A new aggregation fills from history within seconds: the list refreshes until none is under way. */
const BACKFILL_REFRESH_MS = 2000;

export function CataloguePage(props: PageProps) {
  const { session, setSession } = props;
  const surfaces = useLoad(() => v1<{ surfaces: Surface[] }>(session, 'GetAllSurfaces', {}, setSession), [session.projectId]);
  const types = useLoad(() => v1<{ treatmentTypes: TreatmentType[] }>(session, 'GetAllTreatmentTypes', {}, setSession), [session.projectId]);
  const fields = useLoad(() => v1<{ dataFields: DataField[] }>(session, 'GetAllDataFields', {}, setSession), [session.projectId]);
  const events = useLoad(() => v1<{ eventSchemas: EventSchema[] }>(session, 'GetEventSchemas', {}, setSession), [session.projectId]);
  const filling = fields.data?.dataFields.some((f) => f.backfillStatus === 'PENDING' || f.backfillStatus === 'RUNNING');
  useEffect(() => {
    if (!filling) return;
    const timer = window.setTimeout(fields.reload, BACKFILL_REFRESH_MS);
    return () => window.clearTimeout(timer);
  }, [filling, fields.data]);
  if (!session.projectId) return <Empty>Choose or create a project first.</Empty>;
  return (
    <>
      <section aria-labelledby="surfaces-h">
        <h2 id="surfaces-h">Surfaces</h2>
        {surfaces.loading && !surfaces.data && <Loading />}
        <ErrorBanner error={surfaces.error} />
        {surfaces.data?.surfaces.length === 0 && <Empty>No surface yet.</Empty>}
        {!!surfaces.data?.surfaces.length && (
          <ul className="chips" aria-label="Surfaces">
            {surfaces.data.surfaces.map((s) => (
              <li key={s.name} title={s.description || undefined}>
                <code>{s.name}</code> {s.description && <span className="muted">{s.description}</span>}
              </li>
            ))}
          </ul>
        )}
        <NewSurface
          {...props}
          onDone={() => {
            surfaces.reload();
            fields.reload();
          }}
        />
      </section>

      <section aria-labelledby="types-h">
        <h2 id="types-h">Treatment types</h2>
        {types.loading && !types.data && <Loading />}
        <ErrorBanner error={types.error} />
        {types.data?.treatmentTypes.length === 0 && <Empty>No treatment type yet.</Empty>}
        {!!types.data?.treatmentTypes.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">Delivery</th>
                  <th scope="col">Content fields</th>
                  <th scope="col">Surfaces</th>
                  <th scope="col">Last change</th>
                </tr>
              </thead>
              <tbody>
                {types.data.treatmentTypes.map((t) => (
                  <tr key={t.treatmentTypeId}>
                    <td>
                      <strong>{t.treatmentTypeName}</strong> <span className="muted">#{t.treatmentTypeId}</span>
                    </td>
                    <td>{t.deliveryType}</td>
                    <td>
                      {t.contentFieldTypes.map((c) => (
                        <div key={c.fieldName}>
                          <code>{c.fieldName}</code> ≤ {c.maximumLengthAllowed} {c.dataType}
                          {c.isPerLanguage ? ', per language' : ''}
                        </div>
                      ))}
                    </td>
                    <td>{t.surfaces.map((s) => s.surfaceName).join(', ') || '—'}</td>
                    <td>
                      {t.lastModifiedBy}{' '}
                      <span className="muted">
                        {formatTime(t.lastModifiedTimestamp)} {t.modificationSource}
                      </span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <NewType {...props} surfaces={surfaces.data?.surfaces ?? []} onDone={types.reload} />
      </section>

      <GroupsSection {...props} />

      <section aria-labelledby="fields-h">
        <h2 id="fields-h">Data fields</h2>
        {fields.loading && !fields.data && <Loading />}
        <ErrorBanner error={fields.error} />
        {fields.data?.dataFields.length === 0 && <Empty>No data field yet.</Empty>}
        {!!fields.data?.dataFields.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead>
                <tr>
                  <th scope="col">Id</th>
                  <th scope="col">What</th>
                  <th scope="col">Type</th>
                  <th scope="col">Backfill</th>
                </tr>
              </thead>
              <tbody>
                {fields.data.dataFields.map((f) => (
                  <tr key={f.dataFieldId}>
                    <td>
                      <code>{f.dataFieldId}</code>
                    </td>
                    <td>{describeField(f)}</td>
                    <td>{fieldType(f)}</td>
                    <td>{f.backfillStatus && <span className={`badge ${BACKFILL[f.backfillStatus].className}`}>{BACKFILL[f.backfillStatus].text}</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div className="two">
          <NewUserProperty {...props} onDone={fields.reload} />
          <NewAggregation {...props} surfaces={surfaces.data?.surfaces ?? []} onDone={fields.reload} />
        </div>
      </section>

      <section aria-labelledby="events-h">
        <h2 id="events-h">Event schemas</h2>
        <p className="muted">
          Every event name gets a stable id the first time it is seen (or when registered here); a treatment's target action is one of them.
        </p>
        {events.loading && !events.data && <Loading />}
        <ErrorBanner error={events.error} />
        {events.data?.eventSchemas.length === 0 && <Empty>No event schema yet.</Empty>}
        {!!events.data?.eventSchemas.length && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <caption className="sr-only">Event schemas</caption>
              <thead>
                <tr>
                  <th scope="col">Event id</th>
                  <th scope="col">Event name</th>
                  <th scope="col">Registered</th>
                </tr>
              </thead>
              <tbody>
                {events.data.eventSchemas.map((e) => (
                  <tr key={e.eventId}>
                    <td>
                      <code>{e.eventId}</code>
                    </td>
                    <td>event {e.eventName}</td>
                    <td>{formatTime(e.createTime)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <NewEventSchema {...props} onDone={events.reload} />
      </section>
    </>
  );
}

function GroupsSection({ session, setSession }: PageProps) {
  const groups = useLoad(() => v1<{ mutualExclusionGroups: MutualExclusionGroup[] }>(session, 'GetMutualExclusionGroups', {}, setSession), [session.projectId]);
  const treatments = useLoad(() => v1<{ treatments: Treatment[] }>(session, 'GetAllTreatments', {}, setSession), [session.projectId]);
  const members = (name: string) => (treatments.data?.treatments ?? []).filter((t) => t.mutualExclusionGroup?.name === name);
  return (
    <section aria-labelledby="groups-h">
      <h2 id="groups-h">Mutual exclusion groups</h2>
      <p className="muted">
        A GetTreatments response returns at most one treatment of a group (the best ranked). A group is made by naming it in a treatment’s form.
      </p>
      {groups.loading && !groups.data && <Loading />}
      <ErrorBanner error={groups.error ?? treatments.error} />
      {groups.data?.mutualExclusionGroups.length === 0 && <Empty>No mutual exclusion group yet.</Empty>}
      {!!groups.data?.mutualExclusionGroups.length && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Mutual exclusion groups, scrolls sideways on narrow screens">
          <table>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Id</th>
                <th scope="col">Treatments</th>
              </tr>
            </thead>
            <tbody>
              {groups.data.mutualExclusionGroups.map((g) => (
                <tr key={g.mutualExclusionGroupId}>
                  <td>
                    <strong>{g.name}</strong>
                  </td>
                  <td>
                    <code>{g.mutualExclusionGroupId}</code>
                  </td>
                  <td>
                    {treatments.data
                      ? members(g.name)
                          .map((t) => `${t.name} (${t.status})`)
                          .join(', ') || '—'
                      : '…'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
