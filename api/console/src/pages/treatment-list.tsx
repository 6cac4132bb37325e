// The treatments of the project, filtered by status, type, surface, tag and text.
import { useState } from 'react';
import { v1 } from '../api';
import type { PageProps } from '../page-props';
import { newest, surfacesOf, type Treatment } from '../treatment';
import { Empty, ErrorBanner, Field, formatTime, Loading, ScrollTable, StatusBadge, useLoad } from '../ui';

interface Filters {
  status: string;
  type: string;
  surface: string;
  tag: string;
  text: string;
}
const NO_FILTER: Filters = { status: '', type: '', surface: '', tag: '', text: '' };

/** An empty filter lets everything through; tag and text match case-insensitively, in part. */
function matches(t: Treatment, f: Filters): boolean {
  return (
    (!f.status || t.status === f.status) &&
    (!f.type || t.treatmentType.name === f.type) &&
    (!f.surface || surfacesOf(t).includes(f.surface)) &&
    (!f.tag || newest(t).tags.some((x) => x.name.toLowerCase().includes(f.tag.toLowerCase()))) &&
    (!f.text || `${t.name} ${t.treatmentId}`.toLowerCase().includes(f.text.toLowerCase()))
  );
}

export function TreatmentList({ session, setSession, navigate }: PageProps) {
  const list = useLoad(() => v1<{ treatments: Treatment[] }>(session, 'GetAllTreatments', {}, setSession), [session.projectId]);
  const [filters, setFilters] = useState(NO_FILTER);
  const all = list.data?.treatments ?? [];
  const shown = all.filter((t) => matches(t, filters));
  return (
    <>
      <div className="actions">
        <button type="button" className="primary" onClick={() => navigate('treatments/new')}>
          New treatment
        </button>
      </div>
      <FilterBar
        filters={filters}
        onChange={(patch) => setFilters((f) => ({ ...f, ...patch }))}
        types={[...new Set(all.map((t) => t.treatmentType.name))].sort()}
        surfaces={[...new Set(all.flatMap(surfacesOf))].sort()}
      />
      {list.loading && !list.data && <Loading />}
      <ErrorBanner error={list.error} />
      {list.data && all.length === 0 && <Empty>No treatment yet: create the first one.</Empty>}
      {list.data && all.length > 0 && shown.length === 0 && <Empty>No treatment matches these filters.</Empty>}
      {shown.length > 0 && <TreatmentTable treatments={shown} navigate={navigate} />}
    </>
  );
}

function FilterBar({
  filters,
  onChange,
  types,
  surfaces,
}: {
  filters: Filters;
  onChange: (patch: Partial<Filters>) => void;
  types: string[];
  surfaces: string[];
}) {
  return (
    <form className="row card" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
      <Field label="Search">{(id) => <input id={id} type="search" value={filters.text} onChange={(e) => onChange({ text: e.target.value })} />}</Field>
      <Field label="Status">
        {(id) => (
          <AnyOf id={id} value={filters.status} options={['LIVE', 'SCHEDULED', 'DRAFT', 'PAUSED', 'ARCHIVED']} onChange={(status) => onChange({ status })} />
        )}
      </Field>
      <Field label="Type">{(id) => <AnyOf id={id} value={filters.type} options={types} onChange={(type) => onChange({ type })} />}</Field>
      <Field label="Surface">{(id) => <AnyOf id={id} value={filters.surface} options={surfaces} onChange={(surface) => onChange({ surface })} />}</Field>
      <Field label="Tag">{(id) => <input id={id} value={filters.tag} onChange={(e) => onChange({ tag: e.target.value })} />}</Field>
    </form>
  );
}

/** A choice among `options`, or "any". */
function AnyOf({ id, value, options, onChange }: { id: string; value: string; options: string[]; onChange: (v: string) => void }) {
  return (
    <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
      <option value="">any</option>
      {options.map((s) => (
        <option key={s}>{s}</option>
      ))}
    </select>
  );
}

function TreatmentTable({ treatments, navigate }: { treatments: Treatment[]; navigate: PageProps['navigate'] }) {
  return (
    <ScrollTable headers={['Treatment', 'Status', 'Type', 'Surfaces', 'Tags', 'Versions', 'Last change']}>
      {treatments.map((t) => (
        <tr key={t.treatmentId}>
          <td>
            <a
              href={`/console/treatments/${t.treatmentId}`}
              onClick={(e) => {
                e.preventDefault();
                navigate(`treatments/${t.treatmentId}`);
              }}
            >
              {t.name}
            </a>{' '}
            <span className="muted">#{t.treatmentId}</span>
            {t.isFallback && <span className="badge">fallback</span>}
          </td>
          <td>
            <StatusBadge status={t.status} />
          </td>
          <td>{t.treatmentType.name}</td>
          <td>{surfacesOf(t).join(', ') || '—'}</td>
          <td>
            {newest(t)
              .tags.map((x) => x.name)
              .join(', ') || '—'}
          </td>
          <td>{t.versions.length}</td>
          <td>
            {t.lastModifiedBy} <span className="muted">{formatTime(t.lastModifiedTimestamp)}</span>
          </td>
        </tr>
      ))}
    </ScrollTable>
  );
}
