import { useState } from 'react';
import { admin, v1 } from '../api';
import type { PageProps } from '../page-props';
import { CONDITION_LABELS, describeField, type DataField, type Surface } from '../catalogue';
import { Empty, ErrorBanner, Field, formatTime, Loading, StatusBadge, useAction, useLoad } from '../ui';
import type { Treatment } from '../treatment';
import type { ExplainTreatmentsResponse, ListDecisionsResponse, PreviewTreatmentResponse } from '../../../../client/src/wire.generated.js';

// The answers' shapes: the client's wire types, generated from the service's schemas.
type Explanation = ExplainTreatmentsResponse;
type Decision = ListDecisionsResponse['decisions'][number];

const OUTCOME_CLASS: Record<string, string> = { RETURNED: 'ok', HOLDOUT: 'no', GLOBAL_HOLDOUT: 'no', QA: '' };

const REASONS: Record<string, string> = {
  TYPE_MISSING: 'its type no longer exists',
  TYPE_LACKS_SURFACE: 'its type is not on this surface',
  NOT_LIVE: 'not live',
  SURFACE_REMOVED: 'removed from this surface',
  NO_CONTENT_FOR_LANGUAGE: 'no content in this language',
  FREQUENCY_CAPPED: 'frequency cap reached',
  RULE_NOT_MET: 'a rule is not met',
  RETURNED_ON_EARLIER_SURFACE: 'already returned on an earlier surface',
  MUTUAL_EXCLUSION: 'another treatment of its exclusion group was returned',
  MAXIMUM_COUNT_REACHED: 'the surface was already full',
  HELD_OUT: 'the user is in its holdout',
  MINIMUM_COUNT_NOT_MET: 'too few treatments for the surface minimum',
  GLOBAL_HOLDOUT: 'the user is in the global holdout',
  FALLBACK_NOT_NEEDED: 'fallback not needed',
};

function show(v: unknown): string {
  if (v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function InspectorPage({ session, setSession }: PageProps) {
  const params = new URLSearchParams(window.location.search);
  const surfaces = useLoad(() => v1<{ surfaces: Surface[] }>(session, 'GetAllSurfaces', {}, setSession), [session.projectId]);
  const fields = useLoad(() => v1<{ dataFields: DataField[] }>(session, 'GetAllDataFields', {}, setSession), [session.projectId]);
  const treatments = useLoad(() => v1<{ treatments: Treatment[] }>(session, 'GetAllTreatments', {}, setSession), [session.projectId]);
  const [userId, setUserId] = useState(params.get('user') ?? '');
  const [language, setLanguage] = useState('en');
  const [unchecked, setUnchecked] = useState<string[]>([]);
  const [result, setResult] = useState<{
    explain: Explanation;
    decisions: Decision[];
    profile?: { userProperties: Record<string, unknown>; dataFields: Record<string, unknown> };
  } | null>(null);
  const chosen = (surfaces.data?.surfaces ?? []).map((s) => s.name).filter((s) => !unchecked.includes(s));
  const inspect = useAction(async () => {
    setResult(null);
    const [explain, decisions, profile] = await Promise.all([
      v1<Explanation>(
        session,
        'ExplainTreatments',
        { userId, languageCode: language || undefined, surfaces: chosen.map((surface) => ({ surface })) },
        setSession,
      ),
      v1<{ decisions: Decision[] }>(session, 'ListDecisions', { userId, limit: 20 }, setSession).then((r) => r.decisions),
      session.mode === 'admin'
        ? admin<{ profile: { userProperties: Record<string, unknown>; dataFields: Record<string, unknown> } }>(session, 'GetUserProfile', {
            projectId: session.projectId,
            userId,
          }).then((r) => r.profile)
        : Promise.resolve(undefined),
    ]);
    setResult({ explain, decisions, profile });
  });
  const fieldName = (id: string) => {
    const f = fields.data?.dataFields.find((x) => x.dataFieldId === id);
    return f ? describeField(f) : `data field ${id}`;
  };
  const treatmentName = (id: string) => treatments.data?.treatments.find((x) => x.treatmentId === id)?.name ?? 'treatment';
  if (!session.projectId) return <Empty>Choose or create a project first.</Empty>;
  return (
    <>
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          void inspect.go();
        }}
        aria-label="Inspect a user"
      >
        <div className="row">
          <Field label="User id" name="userId" error={inspect.error}>
            {(id, d) => <input id={id} aria-describedby={d} required value={userId} onChange={(e) => setUserId(e.target.value)} />}
          </Field>
          <Field label="Language" name="languageCode" error={inspect.error}>
            {(id, d) => <input id={id} aria-describedby={d} value={language} onChange={(e) => setLanguage(e.target.value)} />}
          </Field>
        </div>
        <fieldset>
          <legend>Surfaces, in request order</legend>
          {surfaces.loading && <Loading />}
          {surfaces.data?.surfaces.length === 0 && <Empty>No surface in this project.</Empty>}
          {surfaces.data?.surfaces.map((s) => (
            <label className="inline" key={s.name}>
              <input
                type="checkbox"
                checked={!unchecked.includes(s.name)}
                onChange={() => setUnchecked((u) => (u.includes(s.name) ? u.filter((x) => x !== s.name) : [...u, s.name]))}
              />{' '}
              {s.name}
            </label>
          ))}
        </fieldset>
        <ErrorBanner error={inspect.error} shownFields={['userId', 'languageCode']} />
        <button type="submit" className="primary" disabled={inspect.busy || chosen.length === 0}>
          {inspect.busy ? 'Inspecting…' : 'Inspect'}
        </button>
      </form>
      {inspect.busy && <Loading what="Asking the service" />}
      {result && (
        <>
          {result.profile && (
            <section aria-labelledby="profile-h">
              <h2 id="profile-h">Profile of {userId}</h2>
              <div className="two">
                <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
                  <table>
                    <caption className="sr-only">User properties</caption>
                    <thead>
                      <tr>
                        <th scope="col">Property</th>
                        <th scope="col">Value</th>
                      </tr>
                    </thead>
                    <tbody>
                      {Object.entries(result.profile.userProperties).map(([k, v]) => (
                        <tr key={k}>
                          <td>{k}</td>
                          <td>{show(v)}</td>
                        </tr>
                      ))}
                      {Object.keys(result.profile.userProperties).length === 0 && (
                        <tr>
                          <td colSpan={2} className="empty">
                            no user property
                          </td>
                        </tr>
                      )}
                    </tbody>
                  </table>
                </div>
                <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
                  <table>
                    <caption className="sr-only">Computed data fields</caption>
                    <thead>
                      <tr>
                        <th scope="col">Data field</th>
                        <th scope="col">Value</th>
                      </tr>
                    </thead>
                    <tbody>
                      {Object.entries(result.profile.dataFields).map(([k, v]) => (
                        <tr key={k}>
                          <td>{fieldName(k)}</td>
                          <td>{show(v)}</td>
                        </tr>
                      ))}
                      {Object.keys(result.profile.dataFields).length === 0 && (
                        <tr>
                          <td colSpan={2} className="empty">
                            no computed value
                          </td>
                        </tr>
                      )}
                    </tbody>
                  </table>
                </div>
              </div>
            </section>
          )}
          <section aria-labelledby="decisions-h" data-testid="recent-decisions">
            <h2 id="decisions-h">Recent decisions for {userId}</h2>
            <p className="muted">What GetTreatments returned or withheld, newest first (the last 20; recorded within a second or so).</p>
            {result.decisions.length === 0 ? (
              <Empty>No decision recorded for this user yet.</Empty>
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
                <table>
                  <caption className="sr-only">Recent decisions</caption>
                  <thead>
                    <tr>
                      <th scope="col">Time</th>
                      <th scope="col">Surface</th>
                      <th scope="col">Treatment</th>
                      <th scope="col">Version</th>
                      <th scope="col">Rank</th>
                      <th scope="col">Outcome</th>
                    </tr>
                  </thead>
                  <tbody>
                    {result.decisions.map((d) => (
                      <tr key={`${d.responseId}/${d.surface}/${d.treatmentId}`}>
                        <td className="nowrap">{formatTime(d.decideTime)}</td>
                        <td>{d.surface}</td>
                        <td>
                          {treatmentName(d.treatmentId)} <span className="muted">#{d.treatmentId}</span>
                        </td>
                        <td>{d.versionNumber}</td>
                        <td>{d.rank}</td>
                        <td>
                          <span className={`badge ${OUTCOME_CLASS[d.outcome] ?? ''}`}>{d.outcome}</span>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          <section aria-labelledby="why-h">
            <h2 id="why-h">What {userId} gets, and why</h2>
            <p className="muted">
              Language {result.explain.explanation.languageCode}, ranking {result.explain.explanation.rankingPolicy}. Nothing was logged or counted.
            </p>
            {result.explain.explanation.surfaces.map((s) => (
              <div className="card" key={s.surface}>
                <h3>
                  Surface {s.surface} <span className="muted">(up to {s.maximumTreatmentCount})</span>
                </h3>
                {s.treatments.length === 0 && <Empty>No treatment targets this surface.</Empty>}
                {s.treatments.map((t) => (
                  <div className="explain-t" key={t.treatmentId} data-testid={`explain-${s.surface}-${t.treatmentId}`}>
                    <div>
                      <span className={`badge ${t.returned ? 'ok' : 'no'}`}>{t.returned ? 'shown' : 'not shown'}</span> <strong>{t.name}</strong>{' '}
                      <span className="muted">#{t.treatmentId}</span> <StatusBadge status={t.status} /> — {t.outcome}
                      {t.reasons.length > 0 && (
                        <>
                          {' '}
                          ({t.reasons.map((r) => REASONS[r] ?? r).join('; ')}
                          {t.blockedBy ? `: ${t.blockedBy}` : ''})
                        </>
                      )}
                    </div>
                    {t.rules.length > 0 && (
                      <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
                        <table>
                          <caption className="sr-only">Rules of {t.name}</caption>
                          <thead>
                            <tr>
                              <th scope="col">Data field</th>
                              <th scope="col">Rule</th>
                              <th scope="col">User's value</th>
                              <th scope="col">Met</th>
                            </tr>
                          </thead>
                          <tbody>
                            {t.rules.map((r, i) => (
                              <tr key={i}>
                                <td>{r.dataFieldName ?? fieldName(r.dataFieldId)}</td>
                                <td>
                                  {CONDITION_LABELS[r.condition] ?? r.condition} {r.rhsValue}
                                </td>
                                <td>
                                  {show(r.value)} <span className="muted">({r.source})</span>
                                </td>
                                <td>
                                  <span className={`badge ${r.outcome.result ? 'ok' : 'no'}`}>{r.outcome.result ? 'yes' : 'no'}</span>{' '}
                                  <span className="muted">{r.outcome.reason}</span>
                                </td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      </div>
                    )}
                  </div>
                ))}
              </div>
            ))}
          </section>
        </>
      )}
      <Preview
        {...{ session, setSession }}
        treatments={treatments.data?.treatments ?? []}
        userId={userId}
        language={language}
        initial={params.get('treatment') ?? ''}
      />
    </>
  );
}

type PreviewResult = PreviewTreatmentResponse;

function Preview({
  session,
  setSession,
  treatments,
  userId,
  language,
  initial,
}: Pick<PageProps, 'session' | 'setSession'> & { treatments: Treatment[]; userId: string; language: string; initial: string }) {
  const [treatmentId, setTreatmentId] = useState(initial);
  const [version, setVersion] = useState('');
  const [result, setResult] = useState<PreviewResult | null>(null);
  const t = treatments.find((x) => x.treatmentId === treatmentId);
  const go = useAction(async () => {
    setResult(null);
    setResult(
      await v1<PreviewResult>(
        session,
        'PreviewTreatment',
        { treatmentId, versionNumber: version ? Number(version) : undefined, userId: userId || undefined, languageCode: language || undefined },
        setSession,
      ),
    );
  });
  let content: Record<string, unknown> = {};
  try {
    content = result ? (JSON.parse(result.userTreatment.treatmentContent) as Record<string, unknown>) : {};
  } catch {
    content = {};
  }
  return (
    <section aria-labelledby="preview-h">
      <h2 id="preview-h">Preview a treatment version for {userId || 'an anonymous user'}</h2>
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          void go.go();
        }}
        aria-label="Preview"
      >
        <div className="row">
          <Field label="Treatment" name="treatmentId" error={go.error}>
            {(id, d) => (
              <select
                id={id}
                aria-describedby={d}
                required
                value={treatmentId}
                onChange={(e) => {
                  setTreatmentId(e.target.value);
                  setVersion('');
                }}
              >
                <option value="">(choose)</option>
                {treatments.map((x) => (
                  <option key={x.treatmentId} value={x.treatmentId}>
                    {x.name} #{x.treatmentId}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Version" name="versionNumber" error={go.error}>
            {(id, d) => (
              <select id={id} aria-describedby={d} value={version} onChange={(e) => setVersion(e.target.value)}>
                <option value="">newest</option>
                {t?.versions.map((v) => (
                  <option key={v.versionNumber} value={v.versionNumber}>
                    {v.versionNumber} ({v.status})
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <ErrorBanner error={go.error} shownFields={['treatmentId', 'versionNumber']} />
        <button type="submit" disabled={go.busy || !treatmentId}>
          Preview
        </button>
      </form>
      {result && (
        <div className="card" data-testid="preview-result">
          <p>
            Version {result.eligibility.versionNumber} <StatusBadge status={result.eligibility.versionStatus} />:{' '}
            <span className={`badge ${result.eligibility.eligible ? 'ok' : 'no'}`}>{result.eligibility.eligible ? 'eligible' : 'not eligible'}</span>
            {result.eligibility.heldOut && ' · held out'}
            {result.eligibility.globallyHeldOut && ' · globally held out'}
            {result.eligibility.capped && ` · ${result.eligibility.capped}`}
          </p>
          <h3>Rendered content ({result.userTreatment.contentLanguageCode})</h3>
          <dl className="facts">
            {Object.entries(content).map(([k, v]) => (
              <div key={k} style={{ display: 'contents' }}>
                <dt>{k}</dt>
                <dd>{show(v)}</dd>
              </div>
            ))}
          </dl>
        </div>
      )}
    </section>
  );
}
