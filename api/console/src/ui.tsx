import { useCallback, useEffect, useId, useState, type ReactNode } from 'react';
import { ApiError, type ErrorDetail } from './api';

/** Details of an API error that name `field` (exactly, or a path under it: `rules[0].rhsValue`). */
export function detailsFor(error: unknown, field: string): ErrorDetail[] {
  if (!(error instanceof ApiError)) return [];
  return error.details.filter((d) => d.field === field || d.field.startsWith(field + '.') || d.field.startsWith(field + '['));
}

/** A labelled control with its hint and the API's complaint about it (the error's `details`). */
export function Field(props: {
  label: string;
  error?: unknown;
  name?: string;
  hint?: ReactNode;
  children: (id: string, describedBy: string | undefined) => ReactNode;
  local?: string | null;
}) {
  const id = useId();
  const problems = props.name ? detailsFor(props.error, props.name).map((d) => d.description) : [];
  if (props.local) problems.unshift(props.local);
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errId = problems.length ? `${id}-err` : undefined;
  const describedBy = [hintId, errId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${problems.length ? ' invalid' : ''}`}>
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, describedBy)}
      {props.hint && (
        <div className="hint" id={hintId}>
          {props.hint}
        </div>
      )}
      {errId && (
        <div className="field-error" id={errId} role="alert">
          {problems.join('; ')}
        </div>
      )}
    </div>
  );
}

/** The error of a call: its message, and the details no field on the form showed. */
export function ErrorBanner({ error, shownFields = [] }: { error: unknown; shownFields?: string[] }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const rest =
    error instanceof ApiError
      ? error.details.filter((d) => !shownFields.some((f) => d.field === f || d.field.startsWith(f + '.') || d.field.startsWith(f + '[')))
      : [];
  return (
    <div className="error-banner" role="alert">
      <strong>{error instanceof ApiError && error.status ? `${error.status} ${error.code}: ` : ''}</strong>
      {message}
      {rest.length > 0 && (
        <ul>
          {rest.map((d, i) => (
            <li key={i}>
              <code>{d.field}</code>: {d.description}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** Load data on mount (and on `reload()`), with loading and error states. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** A submit action with its pending and error state. */
export function useAction<A extends unknown[]>(
  run: (...args: A) => Promise<void>,
): { busy: boolean; error: unknown; go: (...args: A) => Promise<void>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const go = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await run(...args);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, go, clear: () => setError(null) };
}

/** A table that scrolls sideways on narrow screens, reachable by keyboard; `children` are its rows. */
export function ScrollTable({ headers, children, label = 'Table' }: { headers: string[]; children: ReactNode; label?: string }) {
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={`${label}, scrolls sideways on narrow screens`}>
      <table>
        <thead>
          <tr>
            {headers.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status.toLowerCase()}`}>{status}</span>;
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(
          () => setDone(true),
          () => setDone(false),
        );
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC');
}
