import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request, by operation and how many of that operation it has seen. */
export type ProxyRule = (operation: string, n: number) => { delayMs?: number; loseAnswer?: boolean } | undefined;

export interface ServiceProxy {
  url: string;
  /** Requests seen per operation. */
  seen: Map<string, number>;
  rule: ProxyRule;
  close(): Promise<void>;
}

function bodyOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * An HTTP proxy in front of the real service for the client's integration tests: it forwards
 * every request, and per its rule delays one, or forwards it and then loses the service's answer
 * (the client sees 503 + Retry-After although the service accepted the request: the case where
 * only the insertIds keep a retry from counting twice).
 */
export async function startServiceProxy(target: string, rule: ProxyRule = () => undefined): Promise<ServiceProxy> {
  const seen = new Map<string, number>();
  const proxy: ServiceProxy = { url: '', seen, rule, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const operation = (req.url ?? '').split('?')[0].split('/').pop() ?? '';
      const n = (seen.get(operation) ?? 0) + 1;
      seen.set(operation, n);
      const what = proxy.rule(operation, n) ?? {};
      const body = await bodyOf(req);
      if (what.delayMs) await new Promise((r) => setTimeout(r, what.delayMs));
      const headers: Record<string, string> = {};
      for (const h of ['content-type', 'x-api-key', 'content-encoding', 'x-request-id'])
        if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
      const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? new Uint8Array(body) : undefined });
      const text = await answer.text();
      if (what.loseAnswer) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: { code: 503, status: 'UNAVAILABLE', message: 'the proxy lost the answer', details: [] } }));
        return;
      }
      const out: Record<string, string> = { 'content-type': answer.headers.get('content-type') ?? 'application/json' };
      const retryAfter = answer.headers.get('retry-after');
      if (retryAfter) out['retry-after'] = retryAfter;
      res.writeHead(answer.status, out);
      res.end(text);
    })().catch((err: Error) => {
      res.writeHead(502).end(String(err.message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
