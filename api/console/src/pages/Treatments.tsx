import { useMemo, useState } from 'react';
import { stamp, v1 } from '../api';
import type { PageProps } from '../App';
import { checkRhs, CONDITION_LABELS, CONDITIONS_BY_TYPE, describeField, fieldType, type DataField, type EventSchema, type Surface, type TreatmentType } from '../catalogue';
import { Empty, ErrorBanner, Field, formatTime, Loading, StatusBadge, useAction, useLoad } from '../ui';

interface ContentFieldValue {
  fieldName: string;
  stringValue: string;
}
interface Content {
  contentByLanguage: { languageCode: { languageCode: string }; contentFields: ContentFieldValue[] }[];
  languageAgnosticContentFields: ContentFieldValue[];
}
interface Rule {
  dataFieldId: string;
  condition: string;
  rhsValue: string;
  dataMissingBehaviour: string;
}
interface Version {
  versionNumber: number;
  status: string;
  tags: { name: string }[];
  startTimestamp: string;
  endTimestamp?: string;
  content: Content;
  eligibilityRules: { rules: Rule[] };
  removedSurfaces: { surfaces: { name: string }[] };
  targetAction?: { eventId: string };
  publishTime?: string;
  createTime: string;
}
export interface Treatment {
  treatmentId: string;
  name: string;
  description: string;
  status: string;
  treatmentType: { name: string; surfaces: { name: string }[] };
  versions: Version[];
  lastModifiedBy: string;
  lastModifiedTimestamp: string;
  modificationSource: string;
  mutualExclusionGroup?: { name: string };
  holdoutPercentage: number;
  qaUserIds: string[];
  isFallback: boolean;
  frequencyCap?: { maxCount: number; windowName: string; countOf: string };
}

const newest = (t: Treatment): Version => t.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));
const surfacesOf = (t: Treatment): string[] => {
  const removed = new Set(newest(t).removedSurfaces.surfaces.map((s) => s.name));
  return t.treatmentType.surfaces.map((s) => s.name).filter((s) => !removed.has(s));
};

export function TreatmentsPage(props: PageProps) {
  const { session, path } = props;
  if (!session.projectId) return <Empty>Choose or create a project first.</Empty>;
  if (path[0] === 'new') return <TreatmentForm {...props} />;
  if (path[0]) return <TreatmentDetail key={path[0]} {...props} treatmentId={path[0]} editing={path[1] === 'edit'} />;
  return <TreatmentList {...props} />;
}

function TreatmentList({ session, setSession, navigate }: PageProps) {
  const list = useLoad(() => v1<{ treatments: Treatment[] }>(session, 'GetAllTreatments', {}, setSession), [session.projectId]);
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [surface, setSurface] = useState('');
  const [tag, setTag] = useState('');
  const [text, setText] = useState('');
  const all = list.data?.treatments ?? [];
  const types = [...new Set(all.map((t) => t.treatmentType.name))].sort();
  const surfaces = [...new Set(all.flatMap(surfacesOf))].sort();
  const shown = all.filter(
    (t) =>
      (!status || t.status === status) &&
      (!type || t.treatmentType.name === type) &&
      (!surface || surfacesOf(t).includes(surface)) &&
      (!tag || newest(t).tags.some((x) => x.name.toLowerCase().includes(tag.toLowerCase()))) &&
      (!text || `${t.name} ${t.treatmentId}`.toLowerCase().includes(text.toLowerCase())),
  );
  return (
    <>
      <div className="actions">
        <button type="button" className="primary" onClick={() => navigate('treatments/new')}>New treatment</button>
      </div>
      <form className="row card" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <Field label="Search">{(id) => <input id={id} type="search" value={text} onChange={(e) => setText(e.target.value)} />}</Field>
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setStatus(e.target.value)}>
              <option value="">any</option>
              {['LIVE', 'SCHEDULED', 'DRAFT', 'PAUSED', 'ARCHIVED'].map((s) => <option key={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <Field label="Type">
          {(id) => (
            <select id={id} value={type} onChange={(e) => setType(e.target.value)}>
              <option value="">any</option>
              {types.map((s) => <option key={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <Field label="Surface">
          {(id) => (
            <select id={id} value={surface} onChange={(e) => setSurface(e.target.value)}>
              <option value="">any</option>
              {surfaces.map((s) => <option key={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <Field label="Tag">{(id) => <input id={id} value={tag} onChange={(e) => setTag(e.target.value)} />}</Field>
      </form>
      {list.loading && !list.data && <Loading />}
      <ErrorBanner error={list.error} />
      {list.data && all.length === 0 && <Empty>No treatment yet: create the first one.</Empty>}
      {list.data && all.length > 0 && shown.length === 0 && <Empty>No treatment matches these filters.</Empty>}
      {shown.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
          <table>
            <thead>
              <tr>
                <th scope="col">Treatment</th>
                <th scope="col">Status</th>
                <th scope="col">Type</th>
                <th scope="col">Surfaces</th>
                <th scope="col">Tags</th>
                <th scope="col">Versions</th>
                <th scope="col">Last change</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((t) => (
                <tr key={t.treatmentId}>
                  <td>
                    <a href={`/console/treatments/${t.treatmentId}`} onClick={(e) => { e.preventDefault(); navigate(`treatments/${t.treatmentId}`); }}>
                      {t.name}
                    </a>{' '}
                    <span className="muted">#{t.treatmentId}</span>
                    {t.isFallback && <span className="badge">fallback</span>}
                  </td>
                  <td><StatusBadge status={t.status} /></td>
                  <td>{t.treatmentType.name}</td>
                  <td>{surfacesOf(t).join(', ') || '—'}</td>
                  <td>{newest(t).tags.map((x) => x.name).join(', ') || '—'}</td>
                  <td>{t.versions.length}</td>
                  <td>
                    {t.lastModifiedBy} <span className="muted">{formatTime(t.lastModifiedTimestamp)}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function TreatmentDetail({ session, setSession, navigate, treatmentId, editing, ...rest }: PageProps & { treatmentId: string; editing: boolean }) {
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
        <a href="/console/treatments" onClick={(e) => { e.preventDefault(); navigate('treatments'); }}>← All treatments</a>
      </p>
      <h2>
        {t.name} <span className="muted">#{t.treatmentId}</span> <StatusBadge status={t.status} />
      </h2>
      {t.description && <p>{t.description}</p>}
      <div className="actions" role="group" aria-label="Treatment actions">
        <button type="button" onClick={() => navigate(`treatments/${t.treatmentId}/edit`)}>Edit</button>
        {top.status === 'DRAFT' && <button type="button" className="primary" disabled={act.busy} onClick={() => void act.go({ shouldPublish: true })}>Publish version {top.versionNumber}</button>}
        {t.status === 'LIVE' && <button type="button" disabled={act.busy} onClick={() => void act.go({ shouldPause: true })}>Pause</button>}
        {t.status === 'PAUSED' && <button type="button" disabled={act.busy} onClick={() => void act.go({ shouldPublish: true })}>Resume</button>}
        {t.status !== 'ARCHIVED' && (
          <button type="button" className="danger" disabled={act.busy} onClick={() => { if (window.confirm(`Archive "${t.name}"? It stops being delivered.`)) void act.go({ shouldDelete: true }); }}>
            Archive
          </button>
        )}
        <button type="button" onClick={() => navigate(`inspector?treatment=${t.treatmentId}`)}>Preview for a user</button>
        <button type="button" onClick={() => navigate(`reports/${t.treatmentId}`)}>Report</button>
      </div>
      <ErrorBanner error={act.error} />
      <dl className="facts">
        <dt>Type</dt><dd>{t.treatmentType.name}</dd>
        <dt>Surfaces</dt><dd>{surfacesOf(t).join(', ') || '—'}</dd>
        <dt>Target action</dt><dd>{top.targetAction ? `event ${events.data?.eventSchemas.find((e) => e.eventId === top.targetAction!.eventId)?.eventName ?? ''} #${top.targetAction.eventId}` : '—'}</dd>
        <dt>Holdout</dt><dd>{t.holdoutPercentage}%</dd>
        <dt>QA users</dt><dd>{t.qaUserIds.join(', ') || '—'}</dd>
        <dt>Fallback</dt><dd>{t.isFallback ? 'yes' : 'no'}</dd>
        <dt>Frequency cap</dt><dd>{t.frequencyCap ? `${t.frequencyCap.maxCount} ${t.frequencyCap.countOf} in ${t.frequencyCap.windowName}` : '—'}</dd>
        <dt>Mutual exclusion group</dt><dd>{t.mutualExclusionGroup?.name ?? '—'}</dd>
        <dt>Last change</dt><dd>{t.lastModifiedBy}, {formatTime(t.lastModifiedTimestamp)} ({t.modificationSource})</dd>
      </dl>
      <h3>Version history</h3>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
        <table>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Status</th>
              <th scope="col">Runs</th>
              <th scope="col">Published</th>
              <th scope="col">What changed</th>
            </tr>
          </thead>
          <tbody>
            {[...t.versions].sort((a, b) => b.versionNumber - a.versionNumber).map((v) => {
              const prev = t.versions.find((x) => x.versionNumber === v.versionNumber - 1);
              return (
                <tr key={v.versionNumber}>
                  <td>{v.versionNumber}</td>
                  <td><StatusBadge status={v.status} /></td>
                  <td>{formatTime(v.startTimestamp)} → {v.endTimestamp ? formatTime(v.endTimestamp) : 'no end'}</td>
                  <td>{v.publishTime ? formatTime(v.publishTime) : 'draft'}</td>
                  <td>{prev ? versionDiff(prev, v).join('; ') || 'nothing (republished)' : `created with ${v.eligibilityRules.rules.length} rule(s)`}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <VersionView version={top} fields={fields.data?.dataFields ?? []} />
    </>
  );
}

const MISSING: Record<string, string> = { EVALUATE_TO_ELIGIBLE: 'eligible', EVALUATE_TO_INELIGIBLE: 'not eligible', ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED: 'not eligible' };

function VersionView({ version, fields }: { version: Version; fields: DataField[] }) {
  const name = (id: string) => {
    const f = fields.find((x) => x.dataFieldId === id);
    return f ? describeField(f) : `data field ${id}`;
  };
  return (
    <section aria-labelledby="version-h">
      <h3 id="version-h">Version {version.versionNumber}: content and rules</h3>
      <div className="two">
        <div className="card">
          <h4>Content</h4>
          <dl className="facts">
            {version.content.contentByLanguage.flatMap((c) =>
              c.contentFields.map((f) => (
                <div key={`${c.languageCode.languageCode}/${f.fieldName}`} style={{ display: 'contents' }}>
                  <dt>{f.fieldName} ({c.languageCode.languageCode})</dt>
                  <dd>{f.stringValue}</dd>
                </div>
              )),
            )}
            {version.content.languageAgnosticContentFields.map((f) => (
              <div key={`*/${f.fieldName}`} style={{ display: 'contents' }}>
                <dt>{f.fieldName}</dt>
                <dd>{f.stringValue}</dd>
              </div>
            ))}
          </dl>
          <p>Tags: {version.tags.map((x) => x.name).join(', ') || '—'}</p>
        </div>
        <div className="card">
          <h4>Eligibility rules</h4>
          {version.eligibilityRules.rules.length === 0 && <Empty>No rule: every user is eligible.</Empty>}
          <ol>
            {version.eligibilityRules.rules.map((r, i) => (
              <li key={i}>
                {name(r.dataFieldId)} <strong>{CONDITION_LABELS[r.condition] ?? r.condition}</strong> <code>{r.rhsValue}</code> <span className="muted">(data missing: {MISSING[r.dataMissingBehaviour] ?? r.dataMissingBehaviour})</span>
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}

function versionDiff(a: Version, b: Version): string[] {
  const out: string[] = [];
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  if (!same(a.content, b.content)) out.push('content');
  if (!same(a.eligibilityRules, b.eligibilityRules)) out.push(`rules (${a.eligibilityRules.rules.length} → ${b.eligibilityRules.rules.length})`);
  if (!same(a.tags, b.tags)) out.push(`tags → ${b.tags.map((x) => x.name).join(', ') || 'none'}`);
  if (a.startTimestamp !== b.startTimestamp) out.push('start');
  // Publishing a version ends the one before it, so only an end the newer version has counts.
  if (b.endTimestamp !== undefined && a.endTimestamp !== b.endTimestamp) out.push('end');
  if (!same(a.removedSurfaces, b.removedSurfaces)) out.push('removed surfaces');
  if (!same(a.targetAction, b.targetAction)) out.push('target action');
  return out;
}

// ------------------------------------------------------------------------------------------------
// The create / edit form

interface RuleRow {
  dataFieldId: string;
  condition: string;
  rhsValue: string;
  dataMissingBehaviour: string;
}

function toLocal(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
const fromLocal = (v: string): string | undefined => (v ? new Date(v).toISOString() : undefined);

function TreatmentForm({ session, setSession, navigate, existing }: PageProps & { existing?: Treatment }) {
  const types = useLoad(() => v1<{ treatmentTypes: TreatmentType[] }>(session, 'GetAllTreatmentTypes', {}, setSession), [session.projectId]);
  const fields = useLoad(() => v1<{ dataFields: DataField[] }>(session, 'GetAllDataFields', {}, setSession), [session.projectId]);
  const surfaces = useLoad(() => v1<{ surfaces: Surface[] }>(session, 'GetAllSurfaces', {}, setSession), [session.projectId]);
  const events = useLoad(() => v1<{ eventSchemas: EventSchema[] }>(session, 'GetEventSchemas', {}, setSession), [session.projectId]);
  const top = existing ? newest(existing) : undefined;
  const [targetEventId, setTargetEventId] = useState(top?.targetAction?.eventId ?? '');
  const [name, setName] = useState(existing?.name ?? '');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [typeName, setTypeName] = useState(existing?.treatmentType.name ?? '');
  const [start, setStart] = useState(toLocal(top?.startTimestamp ?? new Date().toISOString()));
  const [end, setEnd] = useState(toLocal(top?.endTimestamp));
  const [languages, setLanguages] = useState<string[]>(top ? top.content.contentByLanguage.map((c) => c.languageCode.languageCode) : ['en']);
  const [values, setValues] = useState<Record<string, string>>(() => {
    const v: Record<string, string> = {};
    for (const c of top?.content.contentByLanguage ?? []) for (const f of c.contentFields) v[`${c.languageCode.languageCode}/${f.fieldName}`] = f.stringValue;
    for (const f of top?.content.languageAgnosticContentFields ?? []) v[`*/${f.fieldName}`] = f.stringValue;
    return v;
  });
  const [newLanguage, setNewLanguage] = useState('');
  const [tags, setTags] = useState(top?.tags.map((x) => x.name).join(', ') ?? '');
  const [rules, setRules] = useState<RuleRow[]>(top?.eligibilityRules.rules.map((r) => ({ ...r })) ?? []);
  const [removed, setRemoved] = useState<string[]>(top?.removedSurfaces.surfaces.map((s) => s.name) ?? []);
  const [holdout, setHoldout] = useState(String(existing?.holdoutPercentage ?? 0));
  const [qa, setQa] = useState(existing?.qaUserIds.join(', ') ?? '');
  const [isFallback, setIsFallback] = useState(existing?.isFallback ?? false);
  const [capOn, setCapOn] = useState(!!existing?.frequencyCap);
  const [cap, setCap] = useState(existing?.frequencyCap ?? { maxCount: 3, windowName: 'LAST_7D', countOf: 'VIEWED' });
  const [group, setGroup] = useState(existing?.mutualExclusionGroup?.name ?? '');
  const [publish, setPublish] = useState(false);

  const type = types.data?.treatmentTypes.find((t) => t.treatmentTypeName === typeName);
  const perLanguage = type?.contentFieldTypes.filter((c) => c.isPerLanguage) ?? [];
  const agnostic = type?.contentFieldTypes.filter((c) => !c.isPerLanguage) ?? [];
  const fieldsById = useMemo(() => new Map((fields.data?.dataFields ?? []).map((f) => [f.dataFieldId, f])), [fields.data]);
  const ruleProblems = rules.map((r) => {
    const f = fieldsById.get(r.dataFieldId);
    if (!r.dataFieldId) return 'choose a data field';
    return f ? checkRhs(fieldType(f), r.condition, r.rhsValue) : null;
  });

  const save = useAction(async () => {
    const content = {
      contentByLanguage: languages.map((l) => ({ languageCode: { languageCode: l }, contentFields: perLanguage.map((c) => ({ fieldName: c.fieldName, stringValue: values[`${l}/${c.fieldName}`] ?? '' })) })),
      languageAgnosticContentFields: agnostic.map((c) => ({ fieldName: c.fieldName, stringValue: values[`*/${c.fieldName}`] ?? '' })),
    };
    const body: Record<string, unknown> = {
      name,
      description,
      // An edit keeps the stored times (to the millisecond) unless they were changed here.
      ...(existing && start === toLocal(top?.startTimestamp) ? {} : { startTimestamp: fromLocal(start) }),
      ...(existing && end === toLocal(top?.endTimestamp) ? {} : end ? { endTimestamp: fromLocal(end) } : existing && top?.endTimestamp ? { clearEndTimestamp: true } : {}),
      content,
      tags: tags.split(',').map((s) => s.trim()).filter(Boolean).map((n) => ({ name: n })),
      eligibilityRules: { rules: rules.map((r) => ({ dataFieldId: r.dataFieldId, condition: r.condition, rhsValue: r.rhsValue, dataMissingBehaviour: r.dataMissingBehaviour })) },
      removedSurfaces: { surfaces: removed.map((n) => ({ name: n })) },
      ...(targetEventId ? { targetAction: { eventId: targetEventId } } : existing && top?.targetAction ? { clearTargetAction: true } : {}),
      holdoutPercentage: Number(holdout),
      qaUserIds: qa.split(',').map((s) => s.trim()).filter(Boolean),
      isFallback,
      ...(capOn ? { frequencyCap: { ...cap, maxCount: Number(cap.maxCount) } } : existing?.frequencyCap ? { clearFrequencyCap: true } : {}),
      ...(group || existing?.mutualExclusionGroup ? { mutualExclusionGroup: group } : {}),
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
  const shown = ['name', 'description', 'treatmentTypeName', 'startTimestamp', 'endTimestamp', 'content', 'tags', 'eligibilityRules', 'removedSurfaces', 'targetAction', 'holdoutPercentage', 'qaUserIds', 'frequencyCap', 'mutualExclusionGroup'];
  return (
    <form onSubmit={(e) => { e.preventDefault(); void save.go(); }} aria-label={existing ? 'Edit treatment' : 'New treatment'}>
      <p>
        <a href="/console/treatments" onClick={(e) => { e.preventDefault(); navigate(existing ? `treatments/${existing.treatmentId}` : 'treatments'); }}>← Back</a>
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
                {types.data?.treatmentTypes.map((t) => <option key={t.treatmentTypeId}>{t.treatmentTypeName}</option>)}
              </select>
            )}
          </Field>
        </div>
        <Field label="Description" name="description" error={err}>
          {(id, d) => <textarea id={id} aria-describedby={d} rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
      </div>

      <fieldset className="card">
        <legend>Content</legend>
        {!type && <Empty>Choose a type to see its content fields.</Empty>}
        {type && perLanguage.length > 0 && languages.map((l, li) => (
          <fieldset key={l}>
            <legend>Language {l}</legend>
            {perLanguage.map((c) => (
              <ContentInput key={c.fieldName} label={`${c.fieldName} (${l})`} max={c.maximumLengthAllowed} html={c.dataType === 'HTML'} value={values[`${l}/${c.fieldName}`] ?? ''} onChange={(v) => setValues((s) => ({ ...s, [`${l}/${c.fieldName}`]: v }))} error={err} name={`content.contentByLanguage[${li}]`} />
            ))}
            {languages.length > 1 && <button type="button" onClick={() => setLanguages((ls) => ls.filter((x) => x !== l))}>Remove language {l}</button>}
          </fieldset>
        ))}
        {type && perLanguage.length > 0 && (
          <div className="row">
            <Field label="Add a language" hint="e.g. fr, de-CH">
              {(id, d) => <input id={id} aria-describedby={d} value={newLanguage} onChange={(e) => setNewLanguage(e.target.value)} />}
            </Field>
            <button type="button" disabled={!newLanguage.trim() || languages.includes(newLanguage.trim())} onClick={() => { setLanguages((ls) => [...ls, newLanguage.trim()]); setNewLanguage(''); }}>Add language</button>
          </div>
        )}
        {agnostic.map((c) => (
          <ContentInput key={c.fieldName} label={`${c.fieldName} (every language)`} max={c.maximumLengthAllowed} html={c.dataType === 'HTML'} value={values[`*/${c.fieldName}`] ?? ''} onChange={(v) => setValues((s) => ({ ...s, [`*/${c.fieldName}`]: v }))} error={err} name="content.languageAgnosticContentFields" />
        ))}
        <div className="hint">Placeholders such as {'{{firstName}}'} are filled from the user's properties at delivery.</div>
      </fieldset>

      <fieldset className="card">
        <legend>Eligibility rules (all must hold)</legend>
        {rules.length === 0 && <Empty>No rule: every user is eligible.</Empty>}
        {rules.map((r, i) => {
          const f = fieldsById.get(r.dataFieldId);
          const allowed = f ? CONDITIONS_BY_TYPE[fieldType(f)] ?? [] : [];
          const set = (patch: Partial<RuleRow>) => setRules((rs) => rs.map((x, j) => (j === i ? { ...x, ...patch } : x)));
          const path = `eligibilityRules.rules[${i}]`;
          return (
            <div className="rule row" key={i} role="group" aria-label={`Rule ${i + 1}`}>
              <Field label={`Rule ${i + 1} data field`} name={`${path}.dataFieldId`} error={err}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} required value={r.dataFieldId} onChange={(e) => set({ dataFieldId: e.target.value, condition: '' })}>
                    <option value="">(choose)</option>
                    {fields.data?.dataFields.map((x) => <option key={x.dataFieldId} value={x.dataFieldId}>{describeField(x)} [{fieldType(x)}]</option>)}
                  </select>
                )}
              </Field>
              <Field label={`Rule ${i + 1} condition`} name={`${path}.condition`} error={err}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} required value={r.condition} onChange={(e) => set({ condition: e.target.value })}>
                    <option value="">(choose)</option>
                    {allowed.map((c) => <option key={c} value={c}>{CONDITION_LABELS[c] ?? c}</option>)}
                  </select>
                )}
              </Field>
              <Field label={`Rule ${i + 1} value`} name={`${path}.rhsValue`} error={err} local={r.condition && r.rhsValue !== '' ? ruleProblems[i] : null}>
                {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!(r.condition && r.rhsValue !== '' && ruleProblems[i])} value={r.rhsValue} onChange={(e) => set({ rhsValue: e.target.value })} />}
              </Field>
              <Field label={`Rule ${i + 1} when data is missing`} name={`${path}.dataMissingBehaviour`} error={err}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} value={r.dataMissingBehaviour} onChange={(e) => set({ dataMissingBehaviour: e.target.value })}>
                    <option value="EVALUATE_TO_INELIGIBLE">not eligible</option>
                    <option value="EVALUATE_TO_ELIGIBLE">eligible</option>
                  </select>
                )}
              </Field>
              <button type="button" aria-label={`Remove rule ${i + 1}`} onClick={() => setRules((rs) => rs.filter((_, j) => j !== i))}>Remove</button>
            </div>
          );
        })}
        <button type="button" onClick={() => setRules((rs) => [...rs, { dataFieldId: '', condition: '', rhsValue: '', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE' }])}>Add rule</button>
      </fieldset>

      <fieldset className="card">
        <legend>Schedule and targeting</legend>
        <div className="row">
          <Field label="Starts" name="startTimestamp" error={err}>
            {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" required value={start} onChange={(e) => setStart(e.target.value)} />}
          </Field>
          <Field label="Ends (optional)" name="endTimestamp" error={err}>
            {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" value={end} onChange={(e) => setEnd(e.target.value)} />}
          </Field>
          <Field label="Tags" name="tags" error={err} hint="comma-separated">
            {(id, d) => <input id={id} aria-describedby={d} value={tags} onChange={(e) => setTags(e.target.value)} />}
          </Field>
          <Field label="Mutual exclusion group" name="mutualExclusionGroup" error={err}>
            {(id, d) => <input id={id} aria-describedby={d} value={group} onChange={(e) => setGroup(e.target.value)} />}
          </Field>
        </div>
        {type && type.surfaces.length > 0 && (
          <fieldset>
            <legend>Shown on</legend>
            {type.surfaces.map((s) => (
              <label className="inline" key={s.surfaceName}>
                <input type="checkbox" checked={!removed.includes(s.surfaceName)} onChange={() => setRemoved((rs) => (rs.includes(s.surfaceName) ? rs.filter((x) => x !== s.surfaceName) : [...rs, s.surfaceName]))} /> {s.surfaceName}
              </label>
            ))}
            {surfaces.data && <div className="hint">Surfaces come from the type; unticked ones are removed for this treatment.</div>}
          </fieldset>
        )}
      </fieldset>

      <fieldset className="card">
        <legend>Delivery controls</legend>
        <div className="row">
          <Field label="Target action" name="targetAction" error={err} hint={events.data?.eventSchemas.length === 0 ? 'No event schema yet: register one in the catalogue' : 'The conversion event the report measures'}>
            {(id, d) => (
              <select id={id} aria-describedby={d} value={targetEventId} onChange={(e) => setTargetEventId(e.target.value)}>
                <option value="">(none)</option>
                {(events.data?.eventSchemas ?? []).map((e) => <option key={e.eventId} value={e.eventId}>{e.eventName} #{e.eventId}</option>)}
                {targetEventId && events.data && !events.data.eventSchemas.some((e) => e.eventId === targetEventId) && <option value={targetEventId}>event #{targetEventId}</option>}
              </select>
            )}
          </Field>
          <Field label="Holdout %" name="holdoutPercentage" error={err} hint="Users kept out to measure uplift">
            {(id, d) => <input id={id} aria-describedby={d} type="number" min={0} max={100} step={0.01} value={holdout} onChange={(e) => setHoldout(e.target.value)} />}
          </Field>
          <Field label="QA user ids" name="qaUserIds" error={err} hint="comma-separated; they get the newest version whatever its status">
            {(id, d) => <input id={id} aria-describedby={d} value={qa} onChange={(e) => setQa(e.target.value)} />}
          </Field>
        </div>
        <label className="inline">
          <input type="checkbox" checked={isFallback} onChange={(e) => setIsFallback(e.target.checked)} /> Fallback (shown only when nothing else is)
        </label>
        <label className="inline">
          <input type="checkbox" checked={capOn} onChange={(e) => setCapOn(e.target.checked)} /> Frequency cap
        </label>
        {capOn && (
          <div className="row">
            <Field label="At most" name="frequencyCap.maxCount" error={err}>
              {(id, d) => <input id={id} aria-describedby={d} type="number" min={1} value={cap.maxCount} onChange={(e) => setCap({ ...cap, maxCount: Number(e.target.value) })} />}
            </Field>
            <Field label="Counting" name="frequencyCap.countOf" error={err}>
              {(id, d) => (
                <select id={id} aria-describedby={d} value={cap.countOf} onChange={(e) => setCap({ ...cap, countOf: e.target.value })}>
                  <option>VIEWED</option>
                  <option>RETURNED</option>
                </select>
              )}
            </Field>
            <Field label="Window" name="frequencyCap.windowName" error={err} hint="LAST_<n>D">
              {(id, d) => <input id={id} aria-describedby={d} value={cap.windowName} onChange={(e) => setCap({ ...cap, windowName: e.target.value })} />}
            </Field>
          </div>
        )}
      </fieldset>

      <label className="inline">
        <input type="checkbox" checked={publish} onChange={(e) => setPublish(e.target.checked)} /> Publish {existing ? 'the new version' : 'now'}
      </label>
      <ErrorBanner error={err} shownFields={shown} />
      <div className="actions">
        <button type="submit" className="primary" disabled={save.busy || !typeName}>{save.busy ? 'Saving…' : existing ? 'Save new version' : 'Create treatment'}</button>
      </div>
    </form>
  );
}

function ContentInput(props: { label: string; max: number; html: boolean; value: string; onChange: (v: string) => void; error: unknown; name: string }) {
  const over = props.value.length > props.max;
  return (
    <Field label={props.label} name={props.name} error={props.error} hint={<span className={`counter${over ? ' over' : ''}`}>{props.value.length} / {props.max}{props.html ? ' · HTML' : ''}</span>}>
      {(id, d) =>
        props.max > 120 ? (
          <textarea id={id} aria-describedby={d} aria-invalid={over} rows={3} value={props.value} onChange={(e) => props.onChange(e.target.value)} />
        ) : (
          <input id={id} aria-describedby={d} aria-invalid={over} value={props.value} onChange={(e) => props.onChange(e.target.value)} />
        )
      }
    </Field>
  );
}
