import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse, type ClickHouseClient } from '../../shared/platform/warehouse/clickhouse.js';
import { insertLines } from '../../shared/platform/warehouse/sql/inserts.js';

/**
 * Against a ClickHouse server (CLICKHOUSE_URL) an insert goes over HTTP: the statement in the
 * query string, the rows as the body. The batch writer hands its chunks over as bytes, other
 * callers as text; the server must get the same body either way. A recording HTTP server stands
 * in for ClickHouse (the embedded engine's path is tested against the real engine).
 */
let server: Server;
let client: ClickHouseClient;
const received: { query: string; body: string }[] = [];

const bodyOf = async (req: IncomingMessage): Promise<string> => {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
};

beforeAll(async () => {
  server = createServer((req, res) => {
    void bodyOf(req).then((body) => {
      received.push({ query: new URL(req.url ?? '/', 'http://x').searchParams.get('query') ?? '', body });
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = createClickhouse({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, dataDir: '' });
});

afterAll(async () => {
  await client?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('insertLines over HTTP', () => {
  it('sends chunks given as bytes and as text as one body of lines, with the insert settings', async () => {
    const chunk = '["p","ü \\"u\\"","e"],["p","東京 🚀","f"]';
    await insertLines(client, 'events', [Buffer.from(chunk, 'utf8'), '["p","u","g"]'], { dedupToken: false });
    expect(received).toHaveLength(1);
    expect(received[0].body).toBe(`${chunk}\n["p","u","g"]\n`);
    expect(received[0].query).toMatch(/^INSERT INTO events \(project_id, .*\) SETTINGS .*input_format_parallel_parsing = 0.* FORMAT JSONCompactEachRow$/);
    expect(received[0].query).not.toContain('insert_deduplication_token');
  });

  it('names the same deduplication token for the same rows as bytes or as text', async () => {
    received.length = 0;
    const line = '["p","u","e"]';
    await insertLines(client, 'events', [line]);
    await insertLines(client, 'events', [Buffer.from(line, 'utf8')]);
    const tokens = received.map((r) => /insert_deduplication_token = '([0-9a-f]{64})'/.exec(r.query)?.[1]);
    expect(tokens[0]).toBeDefined();
    expect(tokens[1]).toBe(tokens[0]);
  });
});
