// The content part of the treatment form: an input per content field of the type, in each language.
import { useState, type Dispatch, type SetStateAction } from 'react';
import type { ContentFieldType, TreatmentType } from '../catalogue';
import type { Content } from '../treatment';
import { Empty, Field } from '../ui';

/** What was typed, by `language/field`; `*` stands for the language-agnostic fields. */
export type ContentValues = Record<string, string>;

export function contentValuesOf(content: Content | undefined): ContentValues {
  const v: ContentValues = {};
  for (const c of content?.contentByLanguage ?? []) for (const f of c.contentFields) v[`${c.languageCode.languageCode}/${f.fieldName}`] = f.stringValue;
  for (const f of content?.languageAgnosticContentFields ?? []) v[`*/${f.fieldName}`] = f.stringValue;
  return v;
}

const perLanguageOf = (type: TreatmentType | undefined): ContentFieldType[] => type?.contentFieldTypes.filter((c) => c.isPerLanguage) ?? [];
const agnosticOf = (type: TreatmentType | undefined): ContentFieldType[] => type?.contentFieldTypes.filter((c) => !c.isPerLanguage) ?? [];

/** The content as the API takes it: every field of the type, empty where nothing was typed. */
export function contentBody(type: TreatmentType | undefined, languages: string[], values: ContentValues): Content {
  return {
    contentByLanguage: languages.map((l) => ({
      languageCode: { languageCode: l },
      contentFields: perLanguageOf(type).map((c) => ({ fieldName: c.fieldName, stringValue: values[`${l}/${c.fieldName}`] ?? '' })),
    })),
    languageAgnosticContentFields: agnosticOf(type).map((c) => ({ fieldName: c.fieldName, stringValue: values[`*/${c.fieldName}`] ?? '' })),
  };
}

interface ContentEditorProps {
  type: TreatmentType | undefined;
  languages: string[];
  setLanguages: Dispatch<SetStateAction<string[]>>;
  values: ContentValues;
  setValues: Dispatch<SetStateAction<ContentValues>>;
  error: unknown;
}

export function ContentEditor({ type, languages, setLanguages, values, setValues, error }: ContentEditorProps) {
  const [newLanguage, setNewLanguage] = useState('');
  const perLanguage = perLanguageOf(type);
  const input = (c: ContentFieldType, key: string, label: string, name: string) => (
    <ContentInput
      key={c.fieldName}
      label={label}
      max={c.maximumLengthAllowed}
      html={c.dataType === 'HTML'}
      value={values[key] ?? ''}
      onChange={(v) => setValues((s) => ({ ...s, [key]: v }))}
      error={error}
      name={name}
    />
  );
  return (
    <fieldset className="card">
      <legend>Content</legend>
      {!type && <Empty>Choose a type to see its content fields.</Empty>}
      {type &&
        perLanguage.length > 0 &&
        languages.map((l, li) => (
          <fieldset key={l}>
            <legend>Language {l}</legend>
            {perLanguage.map((c) => input(c, `${l}/${c.fieldName}`, `${c.fieldName} (${l})`, `content.contentByLanguage[${li}]`))}
            {languages.length > 1 && (
              <button type="button" onClick={() => setLanguages((ls) => ls.filter((x) => x !== l))}>
                Remove language {l}
              </button>
            )}
          </fieldset>
        ))}
      {type && perLanguage.length > 0 && (
        <div className="row">
          <Field label="Add a language" hint="e.g. fr, de-CH">
            {(id, d) => <input id={id} aria-describedby={d} value={newLanguage} onChange={(e) => setNewLanguage(e.target.value)} />}
          </Field>
          <button
            type="button"
            disabled={!newLanguage.trim() || languages.includes(newLanguage.trim())}
            onClick={() => {
              setLanguages((ls) => [...ls, newLanguage.trim()]);
              setNewLanguage('');
            }}
          >
            Add language
          </button>
        </div>
      )}
      {agnosticOf(type).map((c) => input(c, `*/${c.fieldName}`, `${c.fieldName} (every language)`, 'content.languageAgnosticContentFields'))}
      <div className="hint">Placeholders such as {'{{firstName}}'} are filled from the user's properties at delivery.</div>
    </fieldset>
  );
}

/** A content field with its length counter; long fields get a text area. */
function ContentInput(props: { label: string; max: number; html: boolean; value: string; onChange: (v: string) => void; error: unknown; name: string }) {
  const over = props.value.length > props.max;
  return (
    <Field
      label={props.label}
      name={props.name}
      error={props.error}
      hint={
        <span className={`counter${over ? ' over' : ''}`}>
          {props.value.length} / {props.max}
          {props.html ? ' · HTML' : ''}
        </span>
      }
    >
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
