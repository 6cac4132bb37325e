import { toDeadLetterRow, type DeadLetterSource } from '../../shared/platform/warehouse/event-rows.js';
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
  /** The message's `data_type` attribute; each job source has its own. */
  dataType?: string;
  /** @defaultValue now */
  receiveMs?: number;
}

/** The payload type a job source's dead letters carry. */
const JOB_DATA_TYPES: Readonly<Record<DeadLetterSource, string>> = { log_events: 'EventData', log_treatment_interaction: 'Interaction', decision_log: 'Decisions', pubsub: '' };

/** Reasons and data types are for operators; a payload full of errors must not make a huge row. */
const MAX_REASON_CHARS = 4000;
const MAX_DATA_TYPE_CHARS = 100;

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
    const payload = letter.payload instanceof Uint8Array ? letter.payload : Buffer.from(JSON.stringify(letter.payload));
    const row = toDeadLetterRow({
      projectId: letter.projectId,
      messageId: letter.messageId,
      source: letter.source,
      reason: letter.reason.slice(0, MAX_REASON_CHARS),
      receiveMs: letter.receiveMs ?? this.now(),
      dataType: (letter.dataType ?? JOB_DATA_TYPES[letter.source]).slice(0, MAX_DATA_TYPE_CHARS),
      payload,
    });
    await this.warehouse.insertRows('dead_letters', [row]);
  }
}
