// The eligibility rules of the treatment form, each value checked as it is typed.
import { useMemo, type Dispatch, type SetStateAction } from 'react';
import { checkRhs, CONDITION_LABELS, CONDITIONS_BY_TYPE, describeField, fieldType, type DataField } from '../catalogue';
import type { Rule } from '../treatment';
import { Empty, Field } from '../ui';

const NEW_RULE: Rule = { dataFieldId: '', condition: '', rhsValue: '', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE' };

/** The rules as the API takes them (a stored rule may carry more than these four). */
export const rulesBody = (rules: Rule[]): { rules: Rule[] } => ({
  rules: rules.map((r) => ({ dataFieldId: r.dataFieldId, condition: r.condition, rhsValue: r.rhsValue, dataMissingBehaviour: r.dataMissingBehaviour })),
});

export function RuleBuilder({
  rules,
  setRules,
  fields,
  error,
}: {
  rules: Rule[];
  setRules: Dispatch<SetStateAction<Rule[]>>;
  fields: DataField[] | undefined;
  error: unknown;
}) {
  const fieldsById = useMemo(() => new Map((fields ?? []).map((f) => [f.dataFieldId, f])), [fields]);
  return (
    <fieldset className="card">
      <legend>Eligibility rules (all must hold)</legend>
      {rules.length === 0 && <Empty>No rule: every user is eligible.</Empty>}
      {rules.map((r, i) => (
        <RuleInputs
          key={i}
          rule={r}
          index={i}
          field={fieldsById.get(r.dataFieldId)}
          fields={fields}
          error={error}
          onChange={(patch) => setRules((rs) => rs.map((x, j) => (j === i ? { ...x, ...patch } : x)))}
          onRemove={() => setRules((rs) => rs.filter((_, j) => j !== i))}
        />
      ))}
      <button type="button" onClick={() => setRules((rs) => [...rs, { ...NEW_RULE }])}>
        Add rule
      </button>
    </fieldset>
  );
}

interface RuleInputsProps {
  rule: Rule;
  index: number;
  /** the rule's data field, once chosen and known */
  field: DataField | undefined;
  fields: DataField[] | undefined;
  error: unknown;
  onChange: (patch: Partial<Rule>) => void;
  onRemove: () => void;
}

function RuleInputs({ rule: r, index: i, field: f, fields, error, onChange, onRemove }: RuleInputsProps) {
  const allowed = f ? (CONDITIONS_BY_TYPE[fieldType(f)] ?? []) : [];
  const problem = !r.dataFieldId ? 'choose a data field' : f ? checkRhs(fieldType(f), r.condition, r.rhsValue) : null;
  // The value's problem shows once there is a condition and a value to judge.
  const shownProblem = r.condition && r.rhsValue !== '' ? problem : null;
  const path = `eligibilityRules.rules[${i}]`;
  return (
    <div className="rule row" role="group" aria-label={`Rule ${i + 1}`}>
      <Field label={`Rule ${i + 1} data field`} name={`${path}.dataFieldId`} error={error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} required value={r.dataFieldId} onChange={(e) => onChange({ dataFieldId: e.target.value, condition: '' })}>
            <option value="">(choose)</option>
            {fields?.map((x) => (
              <option key={x.dataFieldId} value={x.dataFieldId}>
                {describeField(x)} [{fieldType(x)}]
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label={`Rule ${i + 1} condition`} name={`${path}.condition`} error={error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} required value={r.condition} onChange={(e) => onChange({ condition: e.target.value })}>
            <option value="">(choose)</option>
            {allowed.map((c) => (
              <option key={c} value={c}>
                {CONDITION_LABELS[c] ?? c}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label={`Rule ${i + 1} value`} name={`${path}.rhsValue`} error={error} local={shownProblem}>
        {(id, d) => (
          <input id={id} aria-describedby={d} aria-invalid={!!shownProblem} value={r.rhsValue} onChange={(e) => onChange({ rhsValue: e.target.value })} />
        )}
      </Field>
      <Field label={`Rule ${i + 1} when data is missing`} name={`${path}.dataMissingBehaviour`} error={error}>
        {(id, d) => (
          <select id={id} aria-describedby={d} value={r.dataMissingBehaviour} onChange={(e) => onChange({ dataMissingBehaviour: e.target.value })}>
            <option value="EVALUATE_TO_INELIGIBLE">not eligible</option>
            <option value="EVALUATE_TO_ELIGIBLE">eligible</option>
          </select>
        )}
      </Field>
      <button type="button" aria-label={`Remove rule ${i + 1}`} onClick={onRemove}>
        Remove
      </button>
    </div>
  );
}
