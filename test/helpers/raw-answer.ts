import type { Socket } from 'node:net';

/** One HTTP/1.1 answer read off a keep-alive socket: status, headers (lower-case names) and body. */
export function readAnswer(s: Socket): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const head = text.indexOf('\r\n\r\n');
      if (head < 0) return;
      const lines = text.slice(0, head).split('\r\n');
      const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const length = Number(headers['content-length'] ?? 0);
      if (text.length - head - 4 < length) return;
      s.off('data', onData);
      resolve({ status: Number(lines[0].split(' ')[1]), headers, body: text.slice(head + 4, head + 4 + length) });
    };
    s.on('data', onData).once('error', reject);
  });
}
