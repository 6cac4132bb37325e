import type { Figure, ScenarioResult, Target } from './scenario.js';

function num(x: number, unit: Figure['unit'] | ''): string {
  if (!Number.isFinite(x)) return String(x);
  const digits = unit === 'ms' ? (Math.abs(x) < 10 ? 2 : 1) : unit === 's' ? 2 : Math.abs(x) < 100 ? 1 : 0;
  return x.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function targetText(t: Target | undefined, unit: Figure['unit']): string {
  if (!t) return '';
  const op = t.bound === 'min' ? '≥' : '≤';
  return t.on === 'ratio' ? `ratio ${op} ${t.limit}` : `${op} ${t.limit.toLocaleString('en')} ${unit}`;
}

export const TABLE_HEADER = ['scenario', 'figure', 'value', 'baseline', 'ratio', 'target', 'met'];

/** One row per figure; the baseline column says what the baseline is in the README and the JSON. */
export function tableRows(results: readonly ScenarioResult[]): string[][] {
  const rows: string[][] = [];
  for (const r of results) {
    for (const f of Object.values(r.figures)) {
      rows.push([
        r.scenario,
        f.label,
        `${num(f.value, f.unit)} ${f.unit}`,
        `${num(f.baseline, f.unit)} ${f.unit}`,
        Number.isFinite(f.ratio) ? f.ratio.toFixed(2) : String(f.ratio),
        targetText(f.target, f.unit),
        f.met === undefined ? '' : f.met ? 'yes' : 'NO',
      ]);
    }
  }
  return rows;
}

/** A plain-text table with aligned columns (numbers right-aligned). */
export function formatTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const numeric = header.map((_, c) => rows.length > 0 && rows.every((r) => /^[-\d.,]+( \S+)?$|^$/.test(r[c] ?? '')));
  const line = (cells: readonly string[]) => cells.map((cell, c) => (numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function resultsTable(results: readonly ScenarioResult[]): string {
  return formatTable(TABLE_HEADER, tableRows(results));
}
