/**
 * What the event queue holds and how it cuts it into requests: events of one user go together
 * into LogEvents requests of at most `maxEvents` events and `maxBytes` bytes; each interaction is
 * a LogTreatmentInteraction request of its own. An item keeps its JSON text, serialised once when
 * it was queued, so its size is known and a retry sends the very same bytes (insertIds included).
 */
export interface QueuedItem {
  kind: 'event' | 'interaction';
  /** The event's user (LogEvents); unused for an interaction. */
  userId: string;
  /** The event (LogEvents) or the whole request body (LogTreatmentInteraction), as JSON. */
  json: string;
  /** UTF-8 bytes of `json`. */
  bytes: number;
  /** Order of queueing: the queue is kept in this order, so the oldest are dropped first. */
  seq: number;
  /** Failed attempts so far. */
  attempts: number;
  /** Accepted by the service (a page-hide resend and the original may both succeed). */
  done: boolean;
}

export interface Batch {
  operation: 'LogEvents' | 'LogTreatmentInteraction';
  body: string;
  bytes: number;
  items: QueuedItem[];
}

export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
  /** Requests at most. */
  maxBatches: number;
  /** Bytes in all at most (a page-hide flush: the browser's keepalive budget). */
  maxTotalBytes?: number;
}

/** UTF-8 length of a string without encoding it. */
export function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // a surrogate pair: 4 bytes for its 2 units
      n += 2;
      i++;
    } else n += 2; // the rest of the BMP, and a lone surrogate (sent as U+FFFD)
  }
  return n;
}

function eventsEnvelope(projectId: string, userId: string): { head: string; bytes: number } {
  const head = `{"projectId":${JSON.stringify(projectId)},"userId":${JSON.stringify(userId)},"events":[`;
  return { head, bytes: utf8Bytes(head) + 2 };
}

/**
 * Cuts requests off the front of `queue` (oldest first) within the limits, and returns them with
 * what is left in order. An item that does not fit a request of its own (an event over
 * `maxBytes`) is sent alone and left for the service to judge.
 */
export function takeBatches(queue: readonly QueuedItem[], projectId: string, l: BatchLimits): { batches: Batch[]; rest: QueuedItem[] } {
  const open = new Map<string, { items: QueuedItem[]; bytes: number; head: string }>();
  const batches: Batch[] = [];
  const rest: QueuedItem[] = [];
  let total = 0;
  let full = false;
  const close = (userId: string) => {
    const b = open.get(userId)!;
    open.delete(userId);
    batches.push({ operation: 'LogEvents', body: `${b.head}${b.items.map((i) => i.json).join(',')}]}`, bytes: b.bytes, items: b.items });
  };
  const room = (bytes: number) => batches.length + open.size < l.maxBatches && (l.maxTotalBytes === undefined || total + bytes <= l.maxTotalBytes);
  for (const item of queue) {
    if (item.done) continue;
    if (full) {
      rest.push(item);
      continue;
    }
    if (item.kind === 'interaction') {
      if (room(item.bytes)) {
        batches.push({ operation: 'LogTreatmentInteraction', body: item.json, bytes: item.bytes, items: [item] });
        total += item.bytes;
      } else {
        full = true;
        rest.push(item);
      }
      continue;
    }
    let b = open.get(item.userId);
    const extra = item.bytes + 1;
    if (b && (b.items.length >= l.maxEvents || b.bytes + extra > l.maxBytes)) {
      close(item.userId);
      b = undefined;
    }
    if (b) {
      if (l.maxTotalBytes !== undefined && total + extra > l.maxTotalBytes) {
        full = true;
        rest.push(item);
        continue;
      }
      b.items.push(item);
      b.bytes += extra;
      total += extra;
      continue;
    }
    const envelope = eventsEnvelope(projectId, item.userId);
    if (!room(envelope.bytes + item.bytes)) {
      full = true;
      rest.push(item);
      continue;
    }
    open.set(item.userId, { items: [item], bytes: envelope.bytes + item.bytes, head: envelope.head });
    total += envelope.bytes + item.bytes;
  }
  for (const userId of [...open.keys()]) close(userId);
  return { batches, rest };
}

/**
 * The indexes of `events[i]` named by a 400's details, when every detail names one: those
 * events are refused, the others of the batch may be sent again.
 */
export function refusedEventIndexes(details: readonly { field: string }[], count: number): Set<number> | undefined {
  const refused = new Set<number>();
  for (const d of details) {
    const m = /^events\[(\d+)\]/.exec(d.field);
    if (!m || Number(m[1]) >= count) return undefined;
    refused.add(Number(m[1]));
  }
  return refused.size > 0 ? refused : undefined;
}

/** `back` (in `seq` order, e.g. a failed request's items) merged into the queue `into` (in `seq` order). */
export function mergeBySeq(into: readonly QueuedItem[], back: readonly QueuedItem[]): QueuedItem[] {
  const out: QueuedItem[] = new Array(into.length + back.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < into.length && j < back.length) out[k++] = into[i].seq <= back[j].seq ? into[i++] : back[j++];
  while (i < into.length) out[k++] = into[i++];
  while (j < back.length) out[k++] = back[j++];
  return out;
}
