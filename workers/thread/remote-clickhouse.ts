import { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import type { ClickHouseClient } from '@clickhouse/client';

/**
 * The all-in-one service runs the workers in a thread of their own, and chDB (one engine per
 * process) lives there. The API thread reaches it through this proxy: the two calls it makes,
 * `query` (read JSON rows) and `exec` (an INSERT with a body), sent over the thread's port.
 */
export interface ClickhouseRequest {
  type: 'ch';
  id: number;
  op: 'query' | 'exec';
  args: { query: string; query_params?: Record<string, unknown>; format?: string; values?: string };
}

export interface ClickhouseReply {
  type: 'ch-reply';
  id: number;
  rows?: unknown[];
  error?: { message: string; name: string; code?: string; type?: string };
}

async function readAll(values: unknown): Promise<string> {
  if (typeof values === 'string') return values;
  let out = '';
  for await (const chunk of values as AsyncIterable<string | Buffer>) out += chunk.toString();
  return out;
}

export function remoteClickhouse(port: Worker): ClickHouseClient {
  let next = 0;
  const pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (err: Error) => void }>();
  port.on('message', (msg: ClickhouseReply | { type: string }) => {
    if (msg.type !== 'ch-reply') return;
    const reply = msg as ClickhouseReply;
    const p = pending.get(reply.id);
    if (!p) return;
    pending.delete(reply.id);
    if (reply.error) p.reject(Object.assign(new Error(reply.error.message), reply.error));
    else p.resolve(reply.rows ?? []);
  });
  const call = (op: ClickhouseRequest['op'], args: ClickhouseRequest['args']) =>
    new Promise<unknown[]>((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve, reject });
      port.postMessage({ type: 'ch', id, op, args } satisfies ClickhouseRequest);
    });
  const client = {
    async query(params: { query: string; query_params?: Record<string, unknown>; format?: string }) {
      const rows = await call('query', { query: params.query, query_params: params.query_params, format: params.format ?? 'JSONEachRow' });
      return { json: async () => rows };
    },
    async exec(params: { query: string; values?: unknown }) {
      await call('exec', { query: params.query, values: params.values === undefined ? undefined : await readAll(params.values) });
      return { stream: Readable.from([]), query_id: '' };
    },
    async close() {
      for (const p of pending.values()) p.reject(new Error('ClickHouse thread closed'));
      pending.clear();
    },
  };
  return client as unknown as ClickHouseClient;
}

/** The thread's side: answers the proxy's calls with the real client. */
export async function serveClickhouse(ch: ClickHouseClient, req: ClickhouseRequest): Promise<ClickhouseReply> {
  try {
    if (req.op === 'query') {
      const rs = await ch.query({ query: req.args.query, query_params: req.args.query_params, format: (req.args.format ?? 'JSONEachRow') as 'JSONEachRow' });
      return { type: 'ch-reply', id: req.id, rows: await rs.json() };
    }
    const res = await ch.exec({ query: req.args.query, values: req.args.values === undefined ? undefined : Readable.from([req.args.values]) });
    for await (const chunk of res.stream as AsyncIterable<unknown>) void chunk;
    return { type: 'ch-reply', id: req.id };
  } catch (err) {
    const e = err as Error & { code?: string; type?: string };
    return { type: 'ch-reply', id: req.id, error: { message: e.message, name: e.name, code: e.code, type: e.type } };
  }
}
