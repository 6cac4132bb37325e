import type { Logger } from 'pino';

export type CrashReason = 'uncaughtException' | 'unhandledRejection';

/**
 * A process entry's last line of defence: an exception nothing caught, or a promise rejection
 * nothing handled, is logged (fatal, the error under `err`, scrubbed like every logged error) and
 * handed to `onCrash`, which stops the process in the same order as a SIGTERM and exits non-zero.
 * Node's default would print the stack to stderr, outside the structured log, and exit at once,
 * with requests and batches in flight and a supervisor's children left without their ordered stop.
 * A second fault while the stop runs is logged too; `onCrash` must be idempotent.
 */
export function installCrashHandlers(log: Logger, onCrash: (reason: CrashReason) => void): void {
  process.on('uncaughtException', (err, origin) => {
    log.fatal({ err, origin }, 'uncaught exception; stopping in order');
    onCrash('uncaughtException');
  });
  process.on('unhandledRejection', (reason) => {
    log.fatal({ err: reason }, 'unhandled promise rejection; stopping in order');
    onCrash('unhandledRejection');
  });
}
