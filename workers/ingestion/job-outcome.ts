import { UnrecoverableError } from 'bullmq';
import { asPermanent } from './permanent-errors.js';

/**
 * What the steps of an ingestion job decided, as a value (PostHog's ok | drop | dlq): its effects
 * are stored (`stored`: events applied for the first time), had been applied by an earlier attempt,
 * are dropped on purpose, or can never be stored. A transient failure is not an outcome: it throws,
 * and BullMQ retries the job.
 */
export type JobOutcome = { kind: 'ok'; stored: number } | { kind: 'alreadyApplied' } | { kind: 'drop'; reason: string } | DeadLetter;
export type DeadLetter = { kind: 'deadLetter'; reason: string };

export const ALREADY_APPLIED: JobOutcome = Object.freeze({ kind: 'alreadyApplied' });

export function drop(reason: string): JobOutcome {
  return { kind: 'drop', reason };
}

export function deadLetter(reason: string): DeadLetter {
  return { kind: 'deadLetter', reason };
}

/** The count a profile script answers: the events it applied, or -1 when its marker was there (an earlier attempt applied them). */
export function appliedOutcome(applied: number): JobOutcome {
  return applied < 0 ? ALREADY_APPLIED : { kind: 'ok', stored: applied };
}

/** Events stored for the first time (none for any other outcome). */
export function storedOf(outcome: JobOutcome): number {
  return outcome.kind === 'ok' ? outcome.stored : 0;
}

/** A step's outcome, with the errors no retry can cure (`asPermanent`) as a dead letter; any other error is transient and thrown. */
export async function outcomeOf(step: () => Promise<JobOutcome>): Promise<JobOutcome> {
  try {
    return await asPermanent(step);
  } catch (err) {
    if (err instanceof UnrecoverableError) return deadLetter(err.message);
    throw err;
  }
}

/**
 * The one place a job's outcome becomes BullMQ's answer: its return value (the events applied; -1
 * when an earlier attempt had applied them; 0 when dropped), or, for a dead letter, an
 * UnrecoverableError: the job fails without a retry and its failed handler files the dead letter.
 */
export function settle(outcome: JobOutcome): number {
  switch (outcome.kind) {
    case 'ok':
      return outcome.stored;
    case 'alreadyApplied':
      return -1;
    case 'drop':
      return 0;
    case 'deadLetter':
      throw new UnrecoverableError(outcome.reason);
  }
}
