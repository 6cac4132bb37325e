// The catalogue page's forms: each adds one thing through its /v1 operation, then asks the page to reload.
import { useState } from 'react';
import { stamp, v1 } from '../api';
import type { PageProps } from '../page-props';
import type { Surface } from '../catalogue';
import { ErrorBanner, Field, useAction } from '../ui';

export function NewEventSchema({ session, setSession, onDone }: PageProps & { onDone: () => void }) {
  const [eventName, setEventName] = useState('');
  const action = useAction(async () => {
    await v1(session, 'InsertEventSchema', { eventName }, setSession);
    setEventName('');
    onDone();
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Register an event name</h3>
      <div className="row">
        <Field label="Event name" name="eventName" error={action.error} hint="Case-sensitive, 1–256 characters; registering a known name changes nothing">
          {(id, d) => <input id={id} aria-describedby={d} required maxLength={256} value={eventName} onChange={(e) => setEventName(e.target.value)} />}
        </Field>
      </div>
      <ErrorBanner error={action.error} shownFields={['eventName']} />
      <button type="submit" disabled={action.busy}>
        Add event schema
      </button>
    </form>
  );
}

export function NewSurface({ session, setSession, onDone }: PageProps & { onDone: () => void }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const action = useAction(async () => {
    await v1(session, 'InsertSurface', { name, description: description || undefined }, setSession);
    setName('');
    setDescription('');
    onDone();
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Add a surface</h3>
      <div className="row">
        <Field label="Surface name" name="name" error={action.error} hint="Letters, digits and _ - . : /">
          {(id, d) => <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Surface description" name="description" error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
      </div>
      <ErrorBanner error={action.error} shownFields={['name', 'description']} />
      <button type="submit" className="primary" disabled={action.busy}>
        Add surface
      </button>
    </form>
  );
}

interface FieldRow {
  fieldName: string;
  maximumLengthAllowed: string;
  isPerLanguage: boolean;
  dataType: string;
}

export function NewType({ session, setSession, surfaces, onDone }: PageProps & { surfaces: Surface[]; onDone: () => void }) {
  const [name, setName] = useState('');
  const [deliveryType, setDeliveryType] = useState('IN_APP');
  const [chosen, setChosen] = useState<string[]>([]);
  const [rows, setRows] = useState<FieldRow[]>([{ fieldName: 'title', maximumLengthAllowed: '80', isPerLanguage: true, dataType: 'STRING' }]);
  const setRow = (i: number, patch: Partial<FieldRow>) => setRows((rs) => rs.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const action = useAction(async () => {
    await v1(
      session,
      'InsertTreatmentType',
      {
        treatmentTypeName: name,
        deliveryType,
        surfaces: chosen.map((surfaceName) => ({ surfaceName })),
        contentFieldTypes: rows.map((r) => ({
          fieldName: r.fieldName,
          maximumLengthAllowed: Number(r.maximumLengthAllowed),
          isPerLanguage: r.isPerLanguage,
          dataType: r.dataType,
        })),
        ...stamp(session),
      },
      setSession,
    );
    setName('');
    onDone();
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Add a treatment type</h3>
      <div className="row">
        <Field label="Type name" name="treatmentTypeName" error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Delivery type" name="deliveryType" error={action.error}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={deliveryType} onChange={(e) => setDeliveryType(e.target.value)}>
              {['IN_APP', 'EMAIL', 'NOTIFICATION', 'WEBHOOK'].map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <fieldset>
        <legend>Surfaces of the type</legend>
        {surfaces.length === 0 && <span className="muted">Add a surface first.</span>}
        {surfaces.map((s) => (
          <label className="inline" key={s.name}>
            <input
              type="checkbox"
              checked={chosen.includes(s.name)}
              onChange={() => setChosen((c) => (c.includes(s.name) ? c.filter((x) => x !== s.name) : [...c, s.name]))}
            />{' '}
            {s.name}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Content fields</legend>
        {rows.map((r, i) => (
          <div className="row" key={i}>
            <Field label={`Field ${i + 1} name`} name={`contentFieldTypes[${i}].fieldName`} error={action.error}>
              {(id, d) => <input id={id} aria-describedby={d} required value={r.fieldName} onChange={(e) => setRow(i, { fieldName: e.target.value })} />}
            </Field>
            <Field label={`Field ${i + 1} maximum length`} name={`contentFieldTypes[${i}].maximumLengthAllowed`} error={action.error}>
              {(id, d) => (
                <input
                  id={id}
                  aria-describedby={d}
                  type="number"
                  min={1}
                  required
                  value={r.maximumLengthAllowed}
                  onChange={(e) => setRow(i, { maximumLengthAllowed: e.target.value })}
                />
              )}
            </Field>
            <Field label={`Field ${i + 1} data type`} name={`contentFieldTypes[${i}].dataType`} error={action.error}>
              {(id, d) => (
                <select id={id} aria-describedby={d} value={r.dataType} onChange={(e) => setRow(i, { dataType: e.target.value })}>
                  <option>STRING</option>
                  <option>HTML</option>
                </select>
              )}
            </Field>
            <label className="inline">
              <input type="checkbox" checked={r.isPerLanguage} onChange={(e) => setRow(i, { isPerLanguage: e.target.checked })} /> per language
            </label>
            <button type="button" aria-label={`Remove field ${i + 1}`} onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => setRows((rs) => [...rs, { fieldName: '', maximumLengthAllowed: '200', isPerLanguage: true, dataType: 'STRING' }])}>
          Add content field
        </button>
      </fieldset>
      <ErrorBanner error={action.error} shownFields={['treatmentTypeName', 'deliveryType', 'contentFieldTypes']} />
      <button type="submit" className="primary" disabled={action.busy}>
        Add treatment type
      </button>
    </form>
  );
}

export function NewUserProperty({ session, setSession, onDone }: PageProps & { onDone: () => void }) {
  const [name, setName] = useState('');
  const [dataType, setDataType] = useState('STRING');
  const action = useAction(async () => {
    await v1(session, 'InsertDataField', { name, userProperty: { dataType } }, setSession);
    setName('');
    onDone();
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Add a user property</h3>
      <Field label="Property name" name="name" error={action.error}>
        {(id, d) => <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field label="Property type" name="userProperty" error={action.error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} value={dataType} onChange={(e) => setDataType(e.target.value)}>
            <option>STRING</option>
            <option>INTEGER</option>
            <option>BOOLEAN</option>
          </select>
        )}
      </Field>
      <ErrorBanner error={action.error} shownFields={['name', 'userProperty']} />
      <button type="submit" disabled={action.busy}>
        Add user property
      </button>
    </form>
  );
}

const AGGREGATIONS = [
  'dailyCountAggregation',
  'daysSinceLastTimestampAggregation',
  'daysSinceFirstTimestampAggregation',
  'latestTimestampAggregation',
  'firstTimestampAggregation',
];

export function NewAggregation({ session, setSession, surfaces, onDone }: PageProps & { surfaces: Surface[]; onDone: () => void }) {
  const [source, setSource] = useState<'event' | 'interaction'>('event');
  const [eventSchemaName, setEventSchemaName] = useState('');
  const [interaction, setInteraction] = useState('VIEWED');
  const [surfaceName, setSurfaceName] = useState('');
  const [aggregation, setAggregation] = useState('dailyCountAggregation');
  const [windowName, setWindowName] = useState('LAST_7D');
  const action = useAction(async () => {
    const agg = { [aggregation]: aggregation === 'dailyCountAggregation' ? { windowName } : {} };
    const params =
      source === 'event'
        ? { eventDataFieldParams: { eventSchemaName, ...agg } }
        : { treatmentDataFieldParams: { treatmentInteractionType: interaction, ...(surfaceName ? { surfaceName } : {}), ...agg } };
    await v1(session, 'GetDataFields', { dataFieldParams: [params] }, setSession);
    onDone();
  });
  const p = 'dataFieldParams[0]';
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Add an aggregation</h3>
      <Field label="Counted from" error={action.error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} value={source} onChange={(e) => setSource(e.target.value as 'event' | 'interaction')}>
            <option value="event">events of a schema</option>
            <option value="interaction">treatment interactions</option>
          </select>
        )}
      </Field>
      {source === 'event' ? (
        <Field label="Event schema name" name={`${p}.eventDataFieldParams.eventSchemaName`} error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} required value={eventSchemaName} onChange={(e) => setEventSchemaName(e.target.value)} />}
        </Field>
      ) : (
        <div className="row">
          <Field label="Interaction" name={`${p}.treatmentDataFieldParams.treatmentInteractionType`} error={action.error}>
            {(id, d) => (
              <select id={id} aria-describedby={d} value={interaction} onChange={(e) => setInteraction(e.target.value)}>
                {['VIEWED', 'CLICKED', 'DISMISSED'].map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            )}
          </Field>
          <Field label="On surface" name={`${p}.treatmentDataFieldParams.surfaceName`} error={action.error}>
            {(id, d) => (
              <select id={id} aria-describedby={d} value={surfaceName} onChange={(e) => setSurfaceName(e.target.value)}>
                <option value="">any surface</option>
                {surfaces.map((s) => (
                  <option key={s.name}>{s.name}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
      )}
      <div className="row">
        <Field label="Aggregation" error={action.error}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={aggregation} onChange={(e) => setAggregation(e.target.value)}>
              {AGGREGATIONS.map((a) => (
                <option key={a} value={a}>
                  {a
                    .replace(/Aggregation$/, '')
                    .replace(/([A-Z])/g, ' $1')
                    .toLowerCase()}
                </option>
              ))}
            </select>
          )}
        </Field>
        {aggregation === 'dailyCountAggregation' && (
          <Field label="Window" name={p} error={action.error} hint="LAST_<n>D">
            {(id, d) => <input id={id} aria-describedby={d} value={windowName} onChange={(e) => setWindowName(e.target.value)} />}
          </Field>
        )}
      </div>
      <ErrorBanner error={action.error} shownFields={[p]} />
      <button type="submit" disabled={action.busy}>
        Add aggregation
      </button>
    </form>
  );
}
