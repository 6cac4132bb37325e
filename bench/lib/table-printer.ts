import type { Figure, ScenarioResult, Target } from './scenario.js';

/** A number in its unit, as the table shows it (`share` as a percentage). */
export function formatValue(x: number | undefined, unit: Figure['unit']): string {
  if (x === undefined) return '';
  if (!Number.isFinite(x)) return String(x);
  if (unit === 'share') return `${(x * 100).toLocaleString('en', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} %`;
  const digits = unit === 'ms' ? (Math.abs(x) < 10 ? 2 : 1) : unit === 's' ? 2 : Math.abs(x) < 100 ? 1 : 0;
  return `${x.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits })} ${unit}`;
}

export function targetText(t: Target | undefined, unit: Figure['unit']): string {
  if (!t) return '';
  const op = t.bound === 'min' ? '≥' : '≤';
  if (t.on === 'ratio') return `ratio ${op} ${t.limit}`;
  return `${op} ${unit === 'share' ? `${t.limit * 100} %` : `${t.limit.toLocaleString('en')} ${unit}`}`;
}

function ratioText(r: number | undefined): string {
  if (r === undefined) return '';
  return Number.isFinite(r) ? r.toFixed(2) : String(r);
}

function metText(f: Figure): string {
  return f.met === undefined ? '' : f.met ? 'met' : 'NOT MET';
}

export const TABLE_HEADER = ['scenario', 'figure', 'value', 'baseline', 'ratio', 'target', 'met'];

/** One row per figure: value, baseline, ratio and, beside the target, met / NOT MET. */
export function tableRows(results: readonly ScenarioResult[]): string[][] {
  const rows: string[][] = [];
  for (const r of results) {
    for (const f of Object.values(r.figures)) {
      rows.push([
        r.scenario,
        f.label,
        formatValue(f.value, f.unit),
        formatValue(f.baseline, f.unit),
        ratioText(f.ratio),
        targetText(f.target, f.unit),
        metText(f),
      ]);
    }
  }
  return rows;
}

/** A plain-text table with aligned columns (numbers right-aligned). */
export function formatTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const numeric = header.map((_, c) => rows.length > 0 && rows.every((r) => /^[-\d.,]+( \S+)?$|^$/.test(r[c] ?? '')));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function resultsTable(results: readonly ScenarioResult[]): string {
  return formatTable(TABLE_HEADER, tableRows(results));
}

/**
 * The same table in Markdown (for docs/benchmarks.md), an unmet target in bold, then what each
 * scenario's baselines are.
 */
export function markdownTable(results: readonly ScenarioResult[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const lines = [`| ${TABLE_HEADER.join(' | ')} |`, `|${TABLE_HEADER.map((_, c) => (c >= 2 && c <= 4 ? '---:' : '---')).join('|')}|`];
  for (const row of tableRows(results)) lines.push(`| ${row.map((c, i) => (i === 6 && c === 'NOT MET' ? '**not met**' : cell(c))).join(' | ')} |`);
  const baselines: string[] = [];
  for (const r of results) {
    const labels = [
      ...new Set(
        Object.values(r.figures)
          .map((f) => f.baselineLabel)
          .filter((l): l is string => l !== undefined),
      ),
    ];
    if (labels.length > 0) baselines.push(`- ${r.scenario}: ${labels.join('; ')}`);
  }
  return [...lines, '', 'Baselines (measured in the same run):', ...baselines].join('\n');
}
