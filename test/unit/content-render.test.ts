import { describe, expect, it } from 'vitest';
import { hasPlaceholders, placeholderNames, renderContent } from '../../shared/delivery/content-render.js';
import type { ContentField } from '../../shared/treatments/index.js';

const signals: Record<string, string> = { firstName: 'Ada', plan: 'pro', empty: '', dollar: '$& $1 $$' };
const lookup = (name: string): string | undefined => signals[name];

function render(values: Record<string, string>): Record<string, string> {
  const fields: ContentField[] = Object.entries(values).map(([fieldName, stringValue]) => ({ fieldName, stringValue }));
  return JSON.parse(renderContent(fields, lookup));
}

describe('renderContent', () => {
  it('returns a JSON object of field name → value', () => {
    const json = renderContent(
      [
        { fieldName: 'link', stringValue: 'https://x.test' },
        { fieldName: 'title', stringValue: 'Hello' },
      ],
      lookup,
    );
    expect(JSON.parse(json)).toEqual({ link: 'https://x.test', title: 'Hello' });
  });

  it('lets a later field (the chosen language) win over an earlier one of the same name', () => {
    const json = renderContent(
      [
        { fieldName: 'title', stringValue: 'agnostic' },
        { fieldName: 'title', stringValue: 'english' },
      ],
      lookup,
    );
    expect(JSON.parse(json)).toEqual({ title: 'english' });
  });

  it('replaces placeholders, with whitespace around the name allowed', () => {
    expect(render({ t: 'Hi {{firstName}}, {{ plan }} / {{  firstName  }}' })).toEqual({ t: 'Hi Ada, pro / Ada' });
  });

  it('uses the fallback when the name is missing, and the value when present', () => {
    expect(render({ t: 'Hi {{nickname|friend}}!', u: 'Hi {{firstName|friend}}!' })).toEqual({
      t: 'Hi friend!',
      u: 'Hi Ada!',
    });
  });

  it('trims the fallback and allows spaces inside it', () => {
    expect(render({ t: '{{ nickname | dear friend }}' })).toEqual({ t: 'dear friend' });
  });

  it('allows an empty fallback', () => {
    expect(render({ t: '[{{nickname|}}]' })).toEqual({ t: '[]' });
  });

  it('uses an empty string for a missing name without fallback', () => {
    expect(render({ t: 'Hi {{nickname}}!' })).toEqual({ t: 'Hi !' });
  });

  it('uses a present but empty value rather than the fallback', () => {
    expect(render({ t: '[{{empty|x}}]' })).toEqual({ t: '[]' });
  });

  it('inserts values literally (no $-patterns of String.replace)', () => {
    expect(render({ t: '{{dollar}}' })).toEqual({ t: '$& $1 $$' });
  });

  it('handles braces around and inside placeholders', () => {
    expect(render({ t: '{{{firstName}}}' })).toEqual({ t: '{Ada}' });
    expect(render({ t: '{{ {{firstName}} }}' })).toEqual({ t: '{{ Ada }}' });
    expect(render({ t: '{{first{Name}}' })).toEqual({ t: '{{first{Name}}' });
  });

  it('leaves text that is not a placeholder alone', () => {
    const literal = { a: '{{}}', b: '{{ }}', c: '{{|x}}', d: '{{firstName', e: 'firstName}}', f: '{ {firstName} }' };
    expect(render(literal)).toEqual(literal);
  });

  it('does not re-expand placeholders that appear in substituted values', () => {
    const json = renderContent([{ fieldName: 't', stringValue: '{{a}}' }], (name) => (name === 'a' ? '{{b}}' : 'B'));
    expect(JSON.parse(json)).toEqual({ t: '{{b}}' });
  });

  it('copies values without placeholders untouched, including JSON-like and special characters', () => {
    const values = { t: '{"a":{"b":1}}', u: 'line\nbreak "quoted" \\ back', v: '' };
    expect(render(values)).toEqual(values);
  });

  it('never calls lookup for values without placeholders', () => {
    let calls = 0;
    renderContent([{ fieldName: 't', stringValue: 'plain {text}' }], () => {
      calls++;
      return 'x';
    });
    expect(calls).toBe(0);
  });

  it('keeps a field named __proto__ as an ordinary key', () => {
    expect(render({ ['__proto__']: 'x', t: 'y' })).toEqual(JSON.parse('{"__proto__":"x","t":"y"}'));
  });

  it('renders an empty field list as {}', () => {
    expect(renderContent([], lookup)).toBe('{}');
  });
});

describe('hasPlaceholders', () => {
  it('detects placeholders', () => {
    expect(hasPlaceholders('Hi {{name}}')).toBe(true);
    expect(hasPlaceholders('{{ name | x }}')).toBe(true);
  });

  it('is false for text without a valid placeholder', () => {
    expect(hasPlaceholders('plain')).toBe(false);
    expect(hasPlaceholders('{{}}')).toBe(false);
    expect(hasPlaceholders('{name}')).toBe(false);
  });

  it('gives the same answer on repeated calls', () => {
    expect([hasPlaceholders('{{a}}'), hasPlaceholders('{{a}}')]).toEqual([true, true]);
  });
});

describe('placeholderNames', () => {
  it('lists distinct names in order of appearance', () => {
    expect(placeholderNames('{{b}} {{ a|x }} {{b}}')).toEqual(['b', 'a']);
    expect(placeholderNames('none')).toEqual([]);
  });
});
