/**
 * What a service process keeps long enough to be promoted out of V8's young generation, by
 * allocation site: V8's sampling heap profiler counting only the objects that outlived a scavenge
 * (freed by a mark-compact, or still alive when sampling stops). Those are what the scavenges copy
 * and the old generation's collections then free: under ingest, most of the background process's
 * collector time. A tool outside `npm run bench`, in two parts:
 *
 *   1. Preload it into the service's processes and signal the one to sample:
 *        BENCH_SERVICE=dist BENCH_SERVICE_NODE_ARGS="--import tsx --import ./bench/promoted-sample.ts" \
 *          npx tsx bench/run.ts ingest
 *        kill -USR2 <pid of the background process>     # once the load runs
 *      It samples for PROMOTED_SAMPLE_SEC seconds (8) and writes promoted-<pid>.json to
 *      PROMOTED_SAMPLE_DIR (the system's temporary directory); with PROMOTED_SAMPLE_ALL=1 it counts
 *      every allocation and writes allocated-<pid>.json.
 *   2. Summarise a profile: `npx tsx bench/promoted-sample.ts <file>`: the share of the sampled
 *      bytes by allocating function, and by the repository's own frame nearest to the allocation.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

const asScript = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];

if (asScript) summarise(process.argv[2]);
else process.on('SIGUSR2', () => void sample());

async function sample(): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    // PROMOTED_SAMPLE_ALL=1: every allocation, the young generation's garbage included
    includeObjectsCollectedByMinorGC: process.env.PROMOTED_SAMPLE_ALL === '1',
  });
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.PROMOTED_SAMPLE_SEC ?? 8) * 1000));
  const { profile } = await session.post('HeapProfiler.stopSampling');
  // the file's name says what was counted, so the summary can say it too
  const kind = process.env.PROMOTED_SAMPLE_ALL === '1' ? 'allocated' : 'promoted';
  writeFileSync(join(process.env.PROMOTED_SAMPLE_DIR ?? tmpdir(), `${kind}-${process.pid}.json`), JSON.stringify(profile));
  session.disconnect();
}

function summarise(file: string | undefined): void {
  if (!file) throw new Error('usage: npx tsx bench/promoted-sample.ts <promoted-PID.json | allocated-PID.json>');
  const head = (JSON.parse(readFileSync(file, 'utf8')) as { head: SamplingNode }).head;
  const byFunction = new Map<string, number>();
  const byOwnFrame = new Map<string, number>();
  let total = 0;
  const name = (n: SamplingNode): string =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
  const own = (url: string): boolean => /\/(api|shared|workers)\//.test(url) && !url.includes('node_modules');
  const walk = (n: SamplingNode, nearestOwn: string | undefined): void => {
    const mine = own(n.callFrame.url) ? name(n) : nearestOwn;
    if (n.selfSize > 0) {
      total += n.selfSize;
      byFunction.set(name(n), (byFunction.get(name(n)) ?? 0) + n.selfSize);
      byOwnFrame.set(mine ?? '(no frame of the repository)', (byOwnFrame.get(mine ?? '(no frame of the repository)') ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, mine);
  };
  walk(head, undefined);
  const print = (title: string, m: Map<string, number>): void => {
    console.log(title);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${((100 * v) / total).toFixed(1).padStart(6)} %  ${k}`);
  };
  const counted = basename(file).startsWith('allocated-') ? 'allocated (every allocation)' : 'that outlived a scavenge';
  console.log(`${(total / 1e6).toFixed(1)} MB sampled ${counted}`);
  print('by allocating function:', byFunction);
  print("by the repository's nearest frame:", byOwnFrame);
}
