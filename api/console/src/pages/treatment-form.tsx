// The form that creates a treatment, or saves a new version of one.
import { useId, useState } from 'react';
import { stamp, v1 } from '../api';
import type { PageProps } from '../page-props';
import { splitCommaList, type DataField, type EventSchema, type MutualExclusionGroup, type TreatmentType } from '../catalogue';
import { newest, type Rule, type Treatment, type Version } from '../treatment';
import { ErrorBanner, Field, Loading, useAction, useLoad } from '../ui';
import { contentBody, ContentEditor, contentValuesOf } from './content-editor';
import { controlsBody, controlsOf, DeliveryControls } from './delivery-controls';
import { RuleBuilder, rulesBody } from './rule-builder';

/** An ISO time as a datetime-local input shows it, in the browser's time zone. */
function toLocal(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
const fromLocal = (v: string): string | undefined => (v ? new Date(v).toISOString() : undefined);

interface Schedule {
  start: string;
  end: string;
  /** comma-separated */
  tags: string;
  group: string;
  /** the type's surfaces this treatment is not shown on */
  removed: string[];
}

function scheduleOf(existing: Treatment | undefined, top: Version | undefined): Schedule {
  return {
    start: toLocal(top?.startTimestamp ?? new Date().toISOString()),
    end: toLocal(top?.endTimestamp),
    tags: top?.tags.map((x) => x.name).join(', ') ?? '',
    group: existing?.mutualExclusionGroup?.name ?? '',
    removed: top?.removedSurfaces.surfaces.map((s) => s.name) ?? [],
  };
}

/** The schedule and targeting as the API takes them; an edit keeps the stored times (to the millisecond) unless they were changed here. */
function scheduleBody(s: Schedule, existing: Treatment | undefined, top: Version | undefined): Record<string, unknown> {
  return {
    ...(existing && s.start === toLocal(top?.startTimestamp) ? {} : { startTimestamp: fromLocal(s.start) }),
    ...(existing && s.end === toLocal(top?.endTimestamp)
      ? {}
      : s.end
        ? { endTimestamp: fromLocal(s.end) }
        : existing && top?.endTimestamp
          ? { clearEndTimestamp: true }
          : {}),
    tags: splitCommaList(s.tags).map((n) => ({ name: n })),
    removedSurfaces: { surfaces: s.removed.map((n) => ({ name: n })) },
    ...(s.group || existing?.mutualExclusionGroup ? { mutualExclusionGroup: s.group } : {}),
  };
}

/** The fields of the form the API's complaints can name; the rest go to the banner. */
const SHOWN_FIELDS = [
  'name',
  'description',
  'treatmentTypeName',
  'startTimestamp',
  'endTimestamp',
  'content',
  'tags',
  'eligibilityRules',
  'removedSurfaces',
  'targetAction',
  'holdoutPercentage',
  'qaUserIds',
  'frequencyCap',
  'mutualExclusionGroup',
];

export function TreatmentForm({ session, setSession, navigate, existing }: PageProps & { existing?: Treatment }) {
  const types = useLoad(() => v1<{ treatmentTypes: TreatmentType[] }>(session, 'GetAllTreatmentTypes', {}, setSession), [session.projectId]);
  const fields = useLoad(() => v1<{ dataFields: DataField[] }>(session, 'GetAllDataFields', {}, setSession), [session.projectId]);
  const events = useLoad(() => v1<{ eventSchemas: EventSchema[] }>(session, 'GetEventSchemas', {}, setSession), [session.projectId]);
  const groups = useLoad(() => v1<{ mutualExclusionGroups: MutualExclusionGroup[] }>(session, 'GetMutualExclusionGroups', {}, setSession), [session.projectId]);
  const top = existing ? newest(existing) : undefined;
  const [name, setName] = useState(existing?.name ?? '');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [typeName, setTypeName] = useState(existing?.treatmentType.name ?? '');
  const [languages, setLanguages] = useState<string[]>(top ? top.content.contentByLanguage.map((c) => c.languageCode.languageCode) : ['en']);
  const [values, setValues] = useState(() => contentValuesOf(top?.content));
  const [rules, setRules] = useState<Rule[]>(top?.eligibilityRules.rules.map((r) => ({ ...r })) ?? []);
  const [schedule, setSchedule] = useState(() => scheduleOf(existing, top));
  const [controls, setControls] = useState(() => controlsOf(existing));
  const [publish, setPublish] = useState(false);
  const type = types.data?.treatmentTypes.find((t) => t.treatmentTypeName === typeName);

  const save = useAction(async () => {
    const body: Record<string, unknown> = {
      name,
      description,
      content: contentBody(type, languages, values),
      eligibilityRules: rulesBody(rules),
      ...scheduleBody(schedule, existing, top),
      ...controlsBody(controls, existing),
      ...(publish ? { shouldPublish: true } : {}),
      ...stamp(session),
    };
    const r = existing
      ? await v1<{ treatment: Treatment }>(session, 'UpdateTreatment', { treatmentId: existing.treatmentId, ...body }, setSession)
      : await v1<{ treatment: Treatment }>(session, 'InsertTreatment', { treatmentTypeName: typeName, ...body }, setSession);
    navigate(`treatments/${r.treatment.treatmentId}`);
  });
  const err = save.error;
  if (types.loading && !types.data) return <Loading />;
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save.go();
      }}
      aria-label={existing ? 'Edit treatment' : 'New treatment'}
    >
      <p>
        <a
          href="/console/treatments"
          onClick={(e) => {
            e.preventDefault();
            navigate(existing ? `treatments/${existing.treatmentId}` : 'treatments');
          }}
        >
          ← Back
        </a>
      </p>
      <h2>{existing ? `Edit ${existing.name}` : 'New treatment'}</h2>
      <ErrorBanner error={types.error ?? fields.error} />
      <div className="card">
        <div className="row">
          <Field label="Name" name="name" error={err}>
            {(id, d) => <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="Treatment type" name="treatmentTypeName" error={err}>
            {(id, d) => (
              <select id={id} aria-describedby={d} required disabled={!!existing} value={typeName} onChange={(e) => setTypeName(e.target.value)}>
                <option value="">(choose a type)</option>
                {types.data?.treatmentTypes.map((t) => (
                  <option key={t.treatmentTypeId}>{t.treatmentTypeName}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <Field label="Description" name="description" error={err}>
          {(id, d) => <textarea id={id} aria-describedby={d} rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
      </div>
      <ContentEditor type={type} languages={languages} setLanguages={setLanguages} values={values} setValues={setValues} error={err} />
      <RuleBuilder rules={rules} setRules={setRules} fields={fields.data?.dataFields} error={err} />
      <ScheduleFields
        value={schedule}
        onChange={(patch) => setSchedule((s) => ({ ...s, ...patch }))}
        type={type}
        groups={groups.data?.mutualExclusionGroups}
        error={err}
      />
      <DeliveryControls value={controls} onChange={(patch) => setControls((c) => ({ ...c, ...patch }))} events={events.data?.eventSchemas} error={err} />
      <label className="inline">
        <input type="checkbox" checked={publish} onChange={(e) => setPublish(e.target.checked)} /> Publish {existing ? 'the new version' : 'now'}
      </label>
      <ErrorBanner error={err} shownFields={SHOWN_FIELDS} />
      <div className="actions">
        <button type="submit" className="primary" disabled={save.busy || !typeName}>
          {save.busy ? 'Saving…' : existing ? 'Save new version' : 'Create treatment'}
        </button>
      </div>
    </form>
  );
}

interface ScheduleFieldsProps {
  value: Schedule;
  onChange: (patch: Partial<Schedule>) => void;
  type: TreatmentType | undefined;
  /** the project's groups, offered as suggestions; a new name makes a new group */
  groups: MutualExclusionGroup[] | undefined;
  error: unknown;
}

function ScheduleFields({ value: s, onChange, type, groups, error }: ScheduleFieldsProps) {
  const groupList = useId();
  const toggle = (surface: string) => onChange({ removed: s.removed.includes(surface) ? s.removed.filter((x) => x !== surface) : [...s.removed, surface] });
  return (
    <fieldset className="card">
      <legend>Schedule and targeting</legend>
      <div className="row">
        <Field label="Starts" name="startTimestamp" error={error}>
          {(id, d) => (
            <input id={id} aria-describedby={d} type="datetime-local" required value={s.start} onChange={(e) => onChange({ start: e.target.value })} />
          )}
        </Field>
        <Field label="Ends (optional)" name="endTimestamp" error={error}>
          {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" value={s.end} onChange={(e) => onChange({ end: e.target.value })} />}
        </Field>
        <Field label="Tags" name="tags" error={error} hint="comma-separated">
          {(id, d) => <input id={id} aria-describedby={d} value={s.tags} onChange={(e) => onChange({ tags: e.target.value })} />}
        </Field>
        <Field label="Mutual exclusion group" name="mutualExclusionGroup" error={error}>
          {(id, d) => (
            <>
              <input id={id} aria-describedby={d} list={groupList} value={s.group} onChange={(e) => onChange({ group: e.target.value })} />
              <datalist id={groupList}>
                {groups?.map((g) => (
                  <option key={g.mutualExclusionGroupId} value={g.name} />
                ))}
              </datalist>
            </>
          )}
        </Field>
      </div>
      {type && type.surfaces.length > 0 && (
        <fieldset>
          <legend>Shown on</legend>
          {type.surfaces.map((x) => (
            <label className="inline" key={x.surfaceName}>
              <input type="checkbox" checked={!s.removed.includes(x.surfaceName)} onChange={() => toggle(x.surfaceName)} /> {x.surfaceName}
            </label>
          ))}
          <div className="hint">Surfaces come from the type; unticked ones are removed for this treatment.</div>
        </fieldset>
      )}
    </fieldset>
  );
}
