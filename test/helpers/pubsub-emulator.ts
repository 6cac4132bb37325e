import type { ClientConfig } from '@google-cloud/pubsub';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Starts the real Pub/Sub emulator (`gcloud beta emulators pubsub start`) on a free loopback
 * port, for integration tests. It never skips: a missing gcloud, a missing emulator component
 * or a slow start makes `startPubSubEmulator` reject, so the test fails.
 *
 * Pointing a client at it: build the client with `new PubSub(emulator.clientOptions)`, never
 * through the process environment (the tests of a file share a process; other clients keep their own
 * settings). What those options do, found by reading @google-cloud/pubsub 5.3.1:
 * - `apiEndpoint` alone already selects emulator mode (an insecure gRPC channel, no
 *   credentials, `PubSub#isEmulator` true) because it does not end in `.googleapis.com`.
 *   `PUBSUB_EMULATOR_HOST` has the same effect, read only when `apiEndpoint` is unset.
 * - Either way google-gax still asks google-auth-library for the universe domain, which looks
 *   for default credentials and probes the GCE metadata server (169.254.169.254) off the
 *   loopback, then warns `MetadataLookupWarning`. Naming `universeDomain` answers that
 *   question locally; `emulatorMode: true` keeps emulator mode, which a set universe domain
 *   would otherwise turn off.
 *
 * Startup takes 2.5–4 s on the 2-core machine (a Python wrapper starting a JVM); give the
 * `beforeAll` that calls this a hook timeout of 120 s.
 */
export interface PubSubEmulator {
  /** `127.0.0.1:<port>`, for `apiEndpoint`. */
  host: string;
  /** Options for `new PubSub(...)` that reach this emulator and nothing off the machine. */
  clientOptions: ClientConfig & { projectId: string };
  /** A project id unique to this emulator; the emulator accepts any id, this one is a default. */
  projectId: string;
  /** Kills the wrapper and the JVM (the whole process group) and waits for them. Idempotent. */
  stop(): Promise<void>;
}

export interface PubSubEmulatorOptions {
  /** @defaultValue a fresh `test-<random>` id */
  projectId?: string;
  /** @defaultValue 60 000 ms */
  startTimeoutMs?: number;
}

const STOP_GRACE_MS = 10_000;
const OUTPUT_TAIL_CHARS = 4_000;

export async function startPubSubEmulator(options: PubSubEmulatorOptions = {}): Promise<PubSubEmulator> {
  const projectId = options.projectId ?? `test-${Math.random().toString(36).slice(2, 10)}`;
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  // Its own data dir, so emulators started by test files running in parallel never share state files.
  const dataDir = await mkdtemp(join(tmpdir(), 'pubsub-emulator-'));
  const child = spawnEmulator(host, projectId, dataDir);
  const output = captureOutput(child);
  // A forgotten stop() must not keep the test process alive; the 'exit' hook below kills the group then.
  unrefAll(child);
  // A failed spawn emits 'error' and may never emit 'exit'.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  // A test process that dies without calling stop() must not leave a JVM behind.
  const killOnExit = () => {
    killGroup(child, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      await terminateGroup(child, exited);
      await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    await waitUntilReady(host, child, options.startTimeoutMs ?? 60_000);
  } catch (err) {
    await stop();
    throw new Error(`Pub/Sub emulator did not start: ${(err as Error).message}\n--- emulator output ---\n${output()}`);
  }
  const clientOptions = { projectId, apiEndpoint: host, emulatorMode: true, universeDomain: 'googleapis.com' };
  return { host, projectId, clientOptions, stop };
}

function spawnEmulator(host: string, projectId: string, dataDir: string): ChildProcess {
  // detached: a new process group, so stop() reaches the JVM the Python wrapper starts.
  return spawn('gcloud', ['beta', 'emulators', 'pubsub', 'start', `--host-port=${host}`, `--project=${projectId}`, `--data-dir=${dataDir}`], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CLOUDSDK_CORE_DISABLE_PROMPTS: '1' },
  });
}

/** Keeps the last few KB of the emulator's output for the error message. */
function captureOutput(child: ChildProcess): () => string {
  let tail = '';
  const append = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return () => tail;
}

function unrefAll(child: ChildProcess): void {
  child.unref();
  for (const stream of [child.stdout, child.stderr]) (stream as Socket | null)?.unref();
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not read a free port');
  return address.port;
}

/** The emulator answers `GET /` with 200 "Ok" once its server listens. */
async function waitUntilReady(host: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (spawnError) throw new Error(`cannot run gcloud (${spawnError.message}); install the Google Cloud SDK with the pubsub-emulator component`);
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`gcloud exited early (code ${child.exitCode}, signal ${child.signalCode}); is the pubsub-emulator component installed?`);
    }
    if (await answers(host)) return;
    await sleep(200);
  }
  throw new Error(`no answer on http://${host}/ within ${timeoutMs} ms`);
}

async function answers(host: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${host}/`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** SIGTERM to the group, SIGKILL if it outlives the grace period; resolves once every process of it is gone. */
async function terminateGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  killGroup(child, 'SIGTERM');
  await groupGone(child, STOP_GRACE_MS);
  if (groupAlive(child)) {
    killGroup(child, 'SIGKILL');
    await groupGone(child, STOP_GRACE_MS);
  }
  await Promise.race([exited, sleep(STOP_GRACE_MS)]);
}

/** The JVM is re-parented when the wrapper dies, so the wrapper's exit alone does not prove it is gone. */
async function groupGone(child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && groupAlive(child)) await sleep(100);
}

function groupAlive(child: ChildProcess): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}
