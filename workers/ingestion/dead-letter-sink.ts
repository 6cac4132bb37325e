/// <reference lib="es2024.string" />
import { createHash } from 'node:crypto';
import type { DeadLetterSource } from '../../shared/ingestion/index.js';
import { toDeadLetterRow } from '../../shared/ingestion/dead-letters.warehouse.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';

/** An input that can never be stored: kept for operators (ListDeadLetters), never retried. */
export interface DeadLetterEntry {
  projectId: string;
  /** The job id (`<jobId>.<index>` for a request of a merged job) or the Pub/Sub message id. */
  messageId: string;
  source: DeadLetterSource;
  reason: string;
  /** The raw message as received, or a job's data (stored as its JSON). */
  payload: Uint8Array | unknown;
  /**
   * The users the payload names. @defaultValue for a job's data, every `userId` and
   * `preLoginTempUserId` in it; for raw bytes, none (the caller names them when it could decode them)
   */
  userIds?: readonly string[];
  /** The message's `data_type` attribute; each job source has its own. */
  dataType?: string;
  /** @defaultValue now */
  receiveMs?: number;
}

/** The payload type a job source's dead letters carry. */
const JOB_DATA_TYPES: Readonly<Record<DeadLetterSource, string>> = {
  log_events: 'EventData',
  log_treatment_interaction: 'Interaction',
  decision_log: 'Decisions',
  pubsub: '',
};

/** Reasons and data types are for operators; a payload full of errors must not make a huge row. */
const MAX_REASON_CHARS = 4000;
const MAX_DATA_TYPE_CHARS = 100;
/**
 * Bytes of a payload a dead letter keeps: enough to read what went wrong and to replay any
 * ordinary request (a LogEvents request of 10 events is ~2 KB); the rest is replaced by the whole
 * payload's size and SHA-256, so a dead letter costs at most ~90 KB (base64) however large its
 * input, and a flood of poison input cannot grow ClickHouse by its own size.
 */
export const MAX_DEAD_LETTER_PAYLOAD_BYTES = 64 * 1024;
/** Users recorded per dead letter at most (a decision-log job names up to a few hundred). */
export const MAX_DEAD_LETTER_USERS = 1000;
/** Days a dead letter is kept (ClickHouse TTL, migration 0007; RETENTION_DAYS when shorter). */
export const DEAD_LETTER_TTL_DAYS = 30;

/**
 * The one writer of the `dead_letters` table, for every ingestion path (events, interactions,
 * decisions, jobs isolated after stalls, Pub/Sub messages). `store` resolves once the row is in
 * ClickHouse, so the caller may then drop (ack, fail) what it held.
 */
export class DeadLetterSink {
  constructor(
    private readonly warehouse: Pick<Warehouse, 'insertRows'>,
    private readonly now: () => number,
  ) {}

  async store(letter: DeadLetterEntry): Promise<void> {
    const raw = letter.payload instanceof Uint8Array;
    const whole = raw ? (letter.payload as Uint8Array) : Buffer.from(JSON.stringify(letter.payload) ?? 'null');
    const row = toDeadLetterRow({
      projectId: letter.projectId,
      messageId: wellFormed(letter.messageId),
      source: letter.source,
      reason: wellFormed(letter.reason.slice(0, MAX_REASON_CHARS)),
      receiveMs: letter.receiveMs ?? this.now(),
      dataType: wellFormed((letter.dataType ?? JOB_DATA_TYPES[letter.source]).slice(0, MAX_DATA_TYPE_CHARS)),
      payload: whole.subarray(0, MAX_DEAD_LETTER_PAYLOAD_BYTES),
      payloadBytes: whole.byteLength,
      payloadSha256: createHash('sha256').update(whole).digest('hex'),
      userIds: (letter.userIds ?? (raw ? [] : namedUsers(letter.payload))).slice(0, MAX_DEAD_LETTER_USERS).map(wellFormed),
    });
    await this.warehouse.insertRows('dead_letters', [row]);
  }
}

/** A dead letter must be storable whatever text it was given (a lone surrogate would fail the insert). */
function wellFormed(s: string): string {
  return s.isWellFormed() ? s : s.toWellFormed();
}

const USER_MEMBERS = new Set(['userId', 'preLoginTempUserId']);

/**
 * The users a job's data names: the string values of its `userId` and `preLoginTempUserId`
 * members at any depth (a request, the requests of a merged job, their events, a decision job's
 * records, packed or not, an isolated job's wrapped data). Distinct, at most MAX_DEAD_LETTER_USERS.
 */
export function namedUsers(data: unknown): string[] {
  const found = new Set<string>();
  const walk = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== 'object' || depth > 8 || found.size >= MAX_DEAD_LETTER_USERS) return;
    if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1);
      return;
    }
    // a decisions job's records, positional: [projectId, userId, responseId, decideTimeMs, decisions]
    const packed = (v as { kind?: unknown; packed?: unknown }).kind === 'decisions' ? (v as { packed?: unknown }).packed : undefined;
    if (Array.isArray(packed))
      for (const r of packed) if (Array.isArray(r) && typeof r[1] === 'string' && r[1] !== '' && found.size < MAX_DEAD_LETTER_USERS) found.add(r[1]);
    for (const [k, child] of Object.entries(v)) {
      if (USER_MEMBERS.has(k) && typeof child === 'string' && child !== '') found.add(child);
      else walk(child, depth + 1);
    }
  };
  walk(data, 0);
  return [...found].slice(0, MAX_DEAD_LETTER_USERS);
}
