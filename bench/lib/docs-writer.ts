import { readFileSync, writeFileSync } from 'node:fs';
import type { ScenarioResult, Size } from './scenario.js';
import { markdownTable } from './table-printer.js';

/** What `--write-docs` needs of a run (bench/run.ts RunReport). */
export interface DocsRun {
  machine: { cpus: number; cpuModel: string; node: string; platform: string };
  size: Size;
  startedAt: string;
  /** 1-minute load average when the first scenario started and when the last one ended. */
  loadAverage: { before: number; after: number };
  results: ScenarioResult[];
  failures: { scenario: string; error: string }[];
}

/** The results table of docs/benchmarks.md lies between these lines; the rest of the page is written by hand. */
export const DOCS_MARKERS = { start: '<!-- bench:results:start (written by npm run bench -- --write-docs) -->', end: '<!-- bench:results:end -->' };

/** Above this 1-minute load average when a run starts, other work shares the machine: its figures do not go into the docs. */
export const QUIET_LOAD_AVERAGE = 1.5;

/** Why a run's figures must not go into the docs, or undefined when they may. */
export function docsRefusal(run: Pick<DocsRun, 'size' | 'loadAverage'>): string | undefined {
  if (run.size !== 'full') return `--write-docs: not written: a --size ${run.size} run measures toy sizes`;
  if (!(run.loadAverage.before <= QUIET_LOAD_AVERAGE)) {
    return `--write-docs: not written: the load average was ${run.loadAverage.before.toFixed(2)} when the run started (above ${QUIET_LOAD_AVERAGE}): other work was using the machine, so the figures are not the service's. Run again when the machine is quiet.`;
  }
  return undefined;
}

/** The block written between the markers: when, where, the load average, the table, failures. */
export function docsBlock(run: DocsRun, commit: string | undefined): string {
  const names = run.results.map((r) => r.scenario).concat(run.failures.map((f) => f.scenario));
  const lines = [
    `Run of ${run.startedAt.slice(0, 10)}${commit ? ` at commit ${commit}` : ''} (\`npm run bench\`, scenarios: ${names.join(', ')}), ` +
      `${run.machine.cpus} × ${run.machine.cpuModel}, node ${run.machine.node}; load average (1 min) ${run.loadAverage.before.toFixed(2)} when it started, ${run.loadAverage.after.toFixed(2)} when it ended.`,
    '',
    markdownTable(run.results),
  ];
  for (const f of run.failures) lines.push('', `**${f.scenario} failed**: ${f.error.split('\n')[0]}`);
  return lines.join('\n');
}

/** Where the block goes in `file`; throws when the markers are missing (checked before a run, not after it). */
export function docsMarkers(file: string): { text: string; start: number; end: number } {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(DOCS_MARKERS.start);
  const end = text.indexOf(DOCS_MARKERS.end);
  if (start < 0 || end < start) throw new Error(`${file} has no results markers (${DOCS_MARKERS.start} … ${DOCS_MARKERS.end})`);
  return { text, start, end };
}

/** Replaces what lies between the markers of `file` with `block`; throws when the markers are missing. */
export function writeDocsBlock(file: string, block: string): void {
  const { text, start, end } = docsMarkers(file);
  writeFileSync(file, `${text.slice(0, start + DOCS_MARKERS.start.length)}\n\n${block}\n\n${text.slice(end)}`);
}
