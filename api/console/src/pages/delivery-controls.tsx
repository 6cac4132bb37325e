// The delivery controls of the treatment form: target action, holdout, QA users, fallback, frequency cap.
import { splitCommaList, type EventSchema } from '../catalogue';
import { newest, type FrequencyCap, type Treatment } from '../treatment';
import { Field } from '../ui';

export interface Controls {
  targetEventId: string;
  holdout: string;
  /** comma-separated user ids */
  qa: string;
  isFallback: boolean;
  capOn: boolean;
  cap: FrequencyCap;
}

export function controlsOf(existing: Treatment | undefined): Controls {
  return {
    targetEventId: (existing && newest(existing).targetAction?.eventId) ?? '',
    holdout: String(existing?.holdoutPercentage ?? 0),
    qa: existing?.qaUserIds.join(', ') ?? '',
    isFallback: existing?.isFallback ?? false,
    capOn: !!existing?.frequencyCap,
    cap: existing?.frequencyCap ?? { maxCount: 3, windowName: 'LAST_7D', countOf: 'VIEWED' },
  };
}

/** The controls as the API takes them; an edit that turns a target action or a cap off clears it. */
export function controlsBody(c: Controls, existing: Treatment | undefined): Record<string, unknown> {
  return {
    ...(c.targetEventId ? { targetAction: { eventId: c.targetEventId } } : existing && newest(existing).targetAction ? { clearTargetAction: true } : {}),
    holdoutPercentage: Number(c.holdout),
    qaUserIds: splitCommaList(c.qa),
    isFallback: c.isFallback,
    ...(c.capOn ? { frequencyCap: { ...c.cap, maxCount: Number(c.cap.maxCount) } } : existing?.frequencyCap ? { clearFrequencyCap: true } : {}),
  };
}

export function DeliveryControls({
  value: c,
  onChange,
  events,
  error,
}: {
  value: Controls;
  onChange: (patch: Partial<Controls>) => void;
  events: EventSchema[] | undefined;
  error: unknown;
}) {
  return (
    <fieldset className="card">
      <legend>Delivery controls</legend>
      <div className="row">
        <Field
          label="Target action"
          name="targetAction"
          error={error}
          hint={events?.length === 0 ? 'No event schema yet: register one in the catalogue' : 'The conversion event the report measures'}
        >
          {(id, d) => (
            <select id={id} aria-describedby={d} value={c.targetEventId} onChange={(e) => onChange({ targetEventId: e.target.value })}>
              <option value="">(none)</option>
              {(events ?? []).map((e) => (
                <option key={e.eventId} value={e.eventId}>
                  {e.eventName} #{e.eventId}
                </option>
              ))}
              {c.targetEventId && events && !events.some((e) => e.eventId === c.targetEventId) && (
                <option value={c.targetEventId}>event #{c.targetEventId}</option>
              )}
            </select>
          )}
        </Field>
        <Field label="Holdout %" name="holdoutPercentage" error={error} hint="Users kept out to measure uplift">
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              type="number"
              min={0}
              max={100}
              step={0.01}
              value={c.holdout}
              onChange={(e) => onChange({ holdout: e.target.value })}
            />
          )}
        </Field>
        <Field label="QA user ids" name="qaUserIds" error={error} hint="comma-separated; they get the newest version whatever its status">
          {(id, d) => <input id={id} aria-describedby={d} value={c.qa} onChange={(e) => onChange({ qa: e.target.value })} />}
        </Field>
      </div>
      <label className="inline">
        <input type="checkbox" checked={c.isFallback} onChange={(e) => onChange({ isFallback: e.target.checked })} /> Fallback (shown only when nothing else is)
      </label>
      <label className="inline">
        <input type="checkbox" checked={c.capOn} onChange={(e) => onChange({ capOn: e.target.checked })} /> Frequency cap
      </label>
      {c.capOn && <CapInputs cap={c.cap} onChange={(patch) => onChange({ cap: { ...c.cap, ...patch } })} error={error} />}
    </fieldset>
  );
}

function CapInputs({ cap, onChange, error }: { cap: FrequencyCap; onChange: (patch: Partial<FrequencyCap>) => void; error: unknown }) {
  return (
    <div className="row">
      <Field label="At most" name="frequencyCap.maxCount" error={error}>
        {(id, d) => (
          <input id={id} aria-describedby={d} type="number" min={1} value={cap.maxCount} onChange={(e) => onChange({ maxCount: Number(e.target.value) })} />
        )}
      </Field>
      <Field label="Counting" name="frequencyCap.countOf" error={error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} value={cap.countOf} onChange={(e) => onChange({ countOf: e.target.value })}>
            <option>VIEWED</option>
            <option>RETURNED</option>
          </select>
        )}
      </Field>
      <Field label="Window" name="frequencyCap.windowName" error={error} hint="LAST_<n>D">
        {(id, d) => <input id={id} aria-describedby={d} value={cap.windowName} onChange={(e) => onChange({ windowName: e.target.value })} />}
      </Field>
    </div>
  );
}
