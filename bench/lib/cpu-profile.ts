import { readFileSync } from 'node:fs';

/** The parts of a V8 `.cpuprofile` (node --cpu-prof) read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples?: number[];
}

export interface CpuShare {
  name: string;
  /** Share of the main thread's samples, 0..1. */
  share: number;
}

export interface CpuSummary {
  samples: number;
  /** Self time by package (node_modules/<pkg>), `service` (this repository), `node` internals, or V8's (garbage collector) / (idle) / (program). */
  byArea: CpuShare[];
  /** Self time by function, heaviest first. */
  topFunctions: CpuShare[];
}

function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  return 'service';
}

function shortUrl(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (m) return `${m[1]}/${m[2].split('/').pop()}`;
  const repo = /\/(api|shared|workers|bench)\/(.*)$/.exec(url);
  return repo ? `${repo[1]}/${repo[2]}` : url.replace(/^file:\/\//, '');
}

/** Self-time shares of the main JS thread (chDB's and Redis's own threads are not in it). */
export function summarizeCpuProfile(path: string, top = 12): CpuSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const hits = new Map<number, number>();
  if (profile.samples && profile.samples.length > 0) for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  else for (const n of profile.nodes) hits.set(n.id, n.hitCount ?? 0);
  const total = [...hits.values()].reduce((a, b) => a + b, 0) || 1;
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const n of profile.nodes) {
    const h = hits.get(n.id) ?? 0;
    if (h === 0) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + h);
    const fn = url === '' ? functionName || '(anonymous)' : `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
    fns.set(fn, (fns.get(fn) ?? 0) + h);
  }
  const ranked = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, h]) => ({ name, share: h / total }));
  return { samples: total, byArea: ranked(areas, 10), topFunctions: ranked(fns, top) };
}

export function formatCpuSummary(s: CpuSummary): string[] {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  return [
    `main-thread self time by area: ${s.byArea.map((a) => `${a.name} ${pct(a.share)}`).join(', ')}`,
    `heaviest functions: ${s.topFunctions
      .slice(0, 8)
      .map((f) => `${f.name} ${pct(f.share)}`)
      .join('; ')}`,
  ];
}
