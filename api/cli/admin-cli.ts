import type { ChildProcess } from 'node:child_process';
import { pino, type Logger } from 'pino';
import { Value } from 'typebox/value';
import { ConfigError, loadConfig } from '../../shared/platform/config.js';
import { createLogger } from '../../shared/platform/logger.js';
import { installCrashHandlers } from '../../shared/platform/crash-handlers.js';
import { ensureLocalRedis } from '../../shared/platform/redis/local-redis.js';
import { waitForRedis } from '../../shared/platform/redis/redis.js';
import { openApiServices } from '../compose-api.js';
import { ApiError, errorBody, InvalidArgumentError, UnavailableError } from '../../shared/platform/errors.js';
import type { AdminOperation } from '../http/admin-operation.js';
import { adminOperations } from '../admin.routes.js';
import { bodyFromArgs, formatCommandHelp, formatHelp } from './cli-args.js';

/** `npm run admin -- <command> ...`: the admin operations without a running server. */
const ACTOR = 'cli';
const REDIS_WAIT_MS = 5000;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

type Env = Record<string, string | undefined>;

/** Exit codes: 0 done, 1 the operation failed, 2 bad arguments or configuration. */
function exitCodeOf(err: ApiError): number {
  return err.httpStatus === 400 ? 2 : 1;
}

function findOperation(command: string): AdminOperation {
  const op = adminOperations.find((o) => o.command === command);
  if (!op) {
    throw new InvalidArgumentError(`unknown command "${command}"; run: npm run admin -- help`, [
      { field: 'command', description: `one of ${adminOperations.map((o) => o.command).join(', ')}` },
    ]);
  }
  return op;
}

/** Logs never go to stdout, which carries only the JSON answer; secrets are scrubbed as in the service's log. */
function cliLogger(env: Env, level: string): Logger {
  return createLogger(env.LOG_LEVEL ? level : 'warn', 'tds-admin', { destination: pino.destination({ dest: 2, sync: true }) });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  // redis-server flushes its append-only file on SIGTERM; wait so the data is on disk when we exit.
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
}

/** Runs one operation against the stores named by the configuration, exactly as the HTTP route does. */
async function execute(op: AdminOperation, body: unknown, env: Env): Promise<unknown> {
  const config = loadConfig(env);
  const log = cliLogger(env, config.logLevel);
  // Without a running service, start (and afterwards stop) the local Redis the service would use.
  const redisChild = config.autoStartRedis && !config.redisClusterNodes ? await ensureLocalRedis(config.redisUrl, config.dataDir, log) : undefined;
  const api = openApiServices(config, log);
  try {
    await waitForRedis(api.services.redis, REDIS_WAIT_MS).catch(() => {
      throw new UnavailableError(`Redis at REDIS_URL does not answer within ${REDIS_WAIT_MS} ms`);
    });
    const result = await op.handler(body as never, api.services, ACTOR);
    // The HTTP route serialises through the response schema; do the same so both print the same fields.
    return Value.Clean(op.response, Value.Clone(result));
  } finally {
    await api.close();
    if (redisChild) await stopChild(redisChild);
  }
}

function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ConfigError) return new InvalidArgumentError(err.message, [{ field: err.variable, description: err.message }]);
  return new ApiError(500, 'INTERNAL', err instanceof Error ? err.message : String(err));
}

/** Returns the process exit code; the answer goes to `io.out`, errors (the API's error body) to `io.err`. */
export async function runAdminCli(argv: readonly string[], env: Env, io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined) {
      io.err(formatHelp(adminOperations));
      return 2;
    }
    if (command === 'help' || command === '--help' || command === '-h') {
      io.out(rest[0] ? formatCommandHelp(findOperation(rest[0])) : formatHelp(adminOperations));
      return 0;
    }
    const op = findOperation(command);
    if (rest.includes('--help')) {
      io.out(formatCommandHelp(op));
      return 0;
    }
    const body = bodyFromArgs(op.body, rest);
    io.out(JSON.stringify(await execute(op, body, env), null, 2));
    return 0;
  } catch (err) {
    const apiErr = asApiError(err);
    io.err(JSON.stringify(errorBody(apiErr), null, 2));
    return exitCodeOf(apiErr);
  }
}

/** A command cut short by a crash exits 1 after this, whatever it was doing. */
const CRASH_GRACE_MS = 2000;

async function main(): Promise<void> {
  // A fault nothing caught (an error event without a listener, a stray rejection): logged on
  // stderr, exit 1. The command's own clean-up (connections, a Redis it started) gets a short
  // grace to run.
  let crashed = false;
  installCrashHandlers(cliLogger(process.env, 'warn'), () => {
    crashed = true;
    process.exitCode = 1;
    setTimeout(() => process.exit(1), CRASH_GRACE_MS).unref();
  });
  const result = await runAdminCli(process.argv.slice(2), process.env, {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
  });
  process.exitCode = crashed ? 1 : result;
  // A client that failed to close must not keep the command hanging (exit with process.exitCode:
  // a crash after this point still makes it 1).
  setTimeout(() => process.exit(), 2000).unref();
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  void main();
}
