import { useState } from 'react';
import { v1 } from '../api';
import type { PageProps } from '../page-props';
import { Empty, ErrorBanner, Field, formatTime, Loading, StatusBadge, useAction, useLoad } from '../ui';
import type { Treatment } from '../treatment';
import type { GetTreatmentReportResponse } from '../../../../client/src/wire.generated.js';

/** The report's shape: the client's wire type, generated from the service's schema. */
export type Report = GetTreatmentReportResponse['report'];
type ReportGroup = Report['groups'][number];

/** A rate as a percentage, a difference of rates in percentage points. */
const pct = (x: number | undefined, digits = 1) => (x === undefined ? '—' : `${(x * 100).toFixed(digits)} %`);
const pts = (x: number, digits = 1) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(digits)} pts`;

const fromLocal = (v: string): string | undefined => (v ? new Date(v).toISOString() : undefined);

export function ReportsPage({ session, setSession, path, navigate }: PageProps) {
  const treatments = useLoad(() => v1<{ treatments: Treatment[] }>(session, 'GetAllTreatments', {}, setSession), [session.projectId]);
  const [treatmentId, setTreatmentId] = useState(path[0] ?? '');
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [windowDays, setWindowDays] = useState('7');
  const [report, setReport] = useState<Report | null>(null);
  const run = useAction(async () => {
    setReport(null);
    const r = await v1<{ report: Report }>(
      session,
      'GetTreatmentReport',
      { treatmentId, startTimestamp: fromLocal(start), endTimestamp: fromLocal(end), attributionWindowDays: windowDays ? Number(windowDays) : undefined },
      setSession,
    );
    setReport(r.report);
  });
  if (!session.projectId) return <Empty>Choose or create a project first.</Empty>;
  const all = treatments.data?.treatments ?? [];
  const t = all.find((x) => x.treatmentId === (report?.treatmentId ?? treatmentId));
  return (
    <>
      <p className="muted">
        Compares the users who were shown a treatment (TREATED) with those held out of it (HOLDOUT). Conversion rates and the uplift need a target action (set
        it on the treatment) and a holdout.
      </p>
      <form
        className="card"
        aria-label="Report"
        onSubmit={(e) => {
          e.preventDefault();
          void run.go();
        }}
      >
        <div className="row">
          <Field label="Treatment" name="treatmentId" error={run.error}>
            {(id, d) => (
              <select
                id={id}
                aria-describedby={d}
                required
                value={treatmentId}
                onChange={(e) => {
                  setTreatmentId(e.target.value);
                  window.history.replaceState(null, '', `/console/reports/${encodeURIComponent(e.target.value)}`);
                }}
              >
                <option value="">(choose)</option>
                {all.map((x) => (
                  <option key={x.treatmentId} value={x.treatmentId}>
                    {x.name} #{x.treatmentId} ({x.status})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="From (optional)" name="startTimestamp" error={run.error} hint="default: the beginning">
            {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" value={start} onChange={(e) => setStart(e.target.value)} />}
          </Field>
          <Field label="Until (optional)" name="endTimestamp" error={run.error} hint="default: now">
            {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" value={end} onChange={(e) => setEnd(e.target.value)} />}
          </Field>
          <Field
            label="Attribution window (days)"
            name="attributionWindowDays"
            error={run.error}
            hint="1–30; a conversion counts this long after the first decision"
          >
            {(id, d) => (
              <input id={id} aria-describedby={d} type="number" min={1} max={30} step={1} value={windowDays} onChange={(e) => setWindowDays(e.target.value)} />
            )}
          </Field>
        </div>
        {treatments.loading && !treatments.data && <Loading what="Loading treatments" />}
        <ErrorBanner error={treatments.error} />
        {treatments.data && all.length === 0 && <Empty>No treatment yet.</Empty>}
        <ErrorBanner error={run.error} shownFields={['treatmentId', 'startTimestamp', 'endTimestamp', 'attributionWindowDays']} />
        <button type="submit" className="primary" disabled={run.busy || !treatmentId}>
          {run.busy ? 'Counting…' : 'Show report'}
        </button>
      </form>
      {run.busy && <Loading what="Counting in the warehouse" />}
      {report && <ReportView report={report} treatment={t} navigate={navigate} />}
    </>
  );
}

function ReportView({ report, treatment, navigate }: { report: Report; treatment?: Treatment; navigate: (to: string) => void }) {
  const treated = report.groups.find((g) => g.group === 'TREATED');
  const holdout = report.groups.find((g) => g.group === 'HOLDOUT');
  const goal = report.conversionEventName !== undefined;
  const noUsers = report.groups.every((g) => g.users === 0);
  return (
    <section aria-labelledby="report-h" data-testid="report">
      <h2 id="report-h">
        {treatment ? treatment.name : 'Treatment'} <span className="muted">#{report.treatmentId}</span> {treatment && <StatusBadge status={treatment.status} />}
      </h2>
      <p className="muted">
        {goal ? (
          <>
            Target action <code>{report.conversionEventName}</code>.{' '}
          </>
        ) : null}
        {treatment ? <>Holdout {treatment.holdoutPercentage} %. </> : null}
        Counted {formatTime(report.computeTime)}.
      </p>
      {!goal && (
        <div className="card notice" data-testid="no-target-action">
          <strong>No target action.</strong> This treatment has no conversion event, so the report has only users, impressions and clicks.{' '}
          <a
            href={`/console/treatments/${report.treatmentId}/edit`}
            onClick={(e) => {
              e.preventDefault();
              navigate(`treatments/${report.treatmentId}/edit`);
            }}
          >
            Set a target action
          </a>{' '}
          (and a holdout) to measure its uplift.
        </div>
      )}
      {noUsers && <Empty>No decision for this treatment in the period yet: nobody was shown it or held out of it.</Empty>}
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
        <table>
          <caption className="sr-only">Groups</caption>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Users</th>
              <th scope="col">Impressions</th>
              <th scope="col">Clicks</th>
              <th scope="col">Conversions</th>
              <th scope="col">Conversion rate</th>
            </tr>
          </thead>
          <tbody>
            {[treated, holdout]
              .filter((g): g is ReportGroup => !!g)
              .map((g) => (
                <tr key={g.group}>
                  <th scope="row">{g.group}</th>
                  <td>{g.users}</td>
                  <td>{g.impressions}</td>
                  <td>{g.clicks}</td>
                  <td>{g.conversions ?? '—'}</td>
                  <td>{pct(g.conversionRate)}</td>
                </tr>
              ))}
          </tbody>
        </table>
      </div>
      {goal && !report.uplift && !noUsers && <Empty>No uplift yet: both groups need users (is there a holdout?).</Empty>}
      {goal && report.uplift && <UpliftChart treated={treated?.conversionRate ?? 0} holdout={holdout?.conversionRate ?? 0} uplift={report.uplift} />}
    </section>
  );
}

/** Two bars for the rates, then the uplift as a point with its 95 % interval around a zero line. */
function UpliftChart({ treated, holdout, uplift }: { treated: number; holdout: number; uplift: NonNullable<Report['uplift']> }) {
  const { low, high } = uplift.confidenceInterval95;
  const excludesZero = low > 0 || high < 0;
  const verdict = !excludesZero
    ? 'The 95 % interval contains 0: the data cannot yet tell this treatment from no treatment.'
    : low > 0
      ? 'The 95 % interval lies above 0: the treatment raises the conversion rate (at the 95 % level).'
      : 'The 95 % interval lies below 0: the treatment lowers the conversion rate (at the 95 % level).';
  const W = 560;
  const left = 90;
  const right = 20;
  const plot = W - left - right;
  const maxRate = Math.max(treated, holdout, 0.0001);
  const barW = (r: number) => (r / maxRate) * plot * 0.85;
  // The interval axis spans the interval, the point and 0, with a margin.
  const lo = Math.min(low, 0, uplift.absolute);
  const hi = Math.max(high, 0, uplift.absolute);
  const pad = (hi - lo) * 0.15 || 0.01;
  const x = (v: number) => left + ((v - lo + pad) / (hi - lo + 2 * pad)) * plot;
  const y0 = 136;
  const summary = `Conversion rate: treated ${pct(treated)}, holdout ${pct(holdout)}. Uplift ${pts(uplift.absolute)}, 95 % interval ${pts(low)} to ${pts(high)}.`;
  return (
    <div className="card chart" data-testid="uplift-chart">
      <h3>Uplift</h3>
      <p>
        Treated users converted at <strong>{pct(treated)}</strong>, held-out users at <strong>{pct(holdout)}</strong>: {pts(uplift.absolute)}
        {uplift.relative !== undefined && (
          <>
            {' '}
            ({uplift.relative >= 0 ? '+' : '−'}
            {Math.abs(uplift.relative * 100).toFixed(1)} % relative)
          </>
        )}
        , 95 % interval {pts(low)} to {pts(high)}.
      </p>
      <svg viewBox={`0 0 ${W} 186`} width="100%" style={{ maxWidth: W }} role="img" aria-label={summary}>
        <title>{summary}</title>
        <text x={0} y={14} className="axis-title">
          Conversion rate
        </text>
        {[
          { label: 'TREATED', rate: treated, cls: 'bar-treated', yy: 24 },
          { label: 'HOLDOUT', rate: holdout, cls: 'bar-holdout', yy: 56 },
        ].map((b) => (
          <g key={b.label}>
            <text x={left - 8} y={b.yy + 17} textAnchor="end">
              {b.label}
            </text>
            <rect x={left} y={b.yy} width={Math.max(barW(b.rate), 1)} height={24} className={b.cls} />
            <text x={left + Math.max(barW(b.rate), 1) + 6} y={b.yy + 17}>
              {pct(b.rate)}
            </text>
          </g>
        ))}
        <text x={0} y={y0 - 26} className="axis-title">
          Absolute uplift, 95 % interval
        </text>
        <line x1={left} x2={W - right} y1={y0 + 20} y2={y0 + 20} className="axis" />
        <line x1={x(0)} x2={x(0)} y1={y0 - 4} y2={y0 + 26} className="zero" data-testid="zero-line" />
        <text x={x(0)} y={y0 + 42} textAnchor="middle" className="tick">
          0
        </text>
        <line x1={x(low)} x2={x(high)} y1={y0} y2={y0} className={`ci ${excludesZero ? 'sig' : ''}`} data-testid="interval" />
        <line x1={x(low)} x2={x(low)} y1={y0 - 7} y2={y0 + 7} className={`ci ${excludesZero ? 'sig' : ''}`} />
        <line x1={x(high)} x2={x(high)} y1={y0 - 7} y2={y0 + 7} className={`ci ${excludesZero ? 'sig' : ''}`} />
        <circle cx={x(uplift.absolute)} cy={y0} r={5} className={`point ${excludesZero ? 'sig' : ''}`} />
        <text x={x(low)} y={y0 - 11} textAnchor="middle" className="tick">
          {pts(low)}
        </text>
        <text x={x(high)} y={y0 - 11} textAnchor="middle" className="tick">
          {pts(high)}
        </text>
      </svg>
      <p className={`verdict ${excludesZero ? 'sig' : 'insig'}`} data-testid="verdict">
        <strong>{excludesZero ? 'The interval excludes 0.' : 'The interval includes 0.'}</strong> {verdict}
      </p>
    </div>
  );
}
