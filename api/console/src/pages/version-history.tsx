// A treatment's versions: what each changed, and the newest one's content and rules.
import { CONDITION_LABELS, describeField, type DataField } from '../catalogue';
import type { Treatment, Version } from '../treatment';
import { Empty, formatTime, ScrollTable, StatusBadge } from '../ui';

export function VersionHistory({ treatment: t }: { treatment: Treatment }) {
  return (
    <>
      <h3>Version history</h3>
      <ScrollTable headers={['Version', 'Status', 'Runs', 'Published', 'What changed']}>
        {[...t.versions]
          .sort((a, b) => b.versionNumber - a.versionNumber)
          .map((v) => {
            const prev = t.versions.find((x) => x.versionNumber === v.versionNumber - 1);
            return (
              <tr key={v.versionNumber}>
                <td>{v.versionNumber}</td>
                <td>
                  <StatusBadge status={v.status} />
                </td>
                <td>
                  {formatTime(v.startTimestamp)} → {v.endTimestamp ? formatTime(v.endTimestamp) : 'no end'}
                </td>
                <td>{v.publishTime ? formatTime(v.publishTime) : 'draft'}</td>
                <td>{prev ? versionDiff(prev, v).join('; ') || 'nothing (republished)' : `created with ${v.eligibilityRules.rules.length} rule(s)`}</td>
              </tr>
            );
          })}
      </ScrollTable>
    </>
  );
}

const MISSING: Record<string, string> = {
  EVALUATE_TO_ELIGIBLE: 'eligible',
  EVALUATE_TO_INELIGIBLE: 'not eligible',
  ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED: 'not eligible',
};

export function VersionView({ version, fields }: { version: Version; fields: DataField[] }) {
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
                  <dt>
                    {f.fieldName} ({c.languageCode.languageCode})
                  </dt>
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
                {name(r.dataFieldId)} <strong>{CONDITION_LABELS[r.condition] ?? r.condition}</strong> <code>{r.rhsValue}</code>{' '}
                <span className="muted">(data missing: {MISSING[r.dataMissingBehaviour] ?? r.dataMissingBehaviour})</span>
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}

/** What `b` changed from `a`, the version before it, in a few words each. */
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
