import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

/**
 * The `client` scenario's server, in a process of its own so none of its CPU is counted with the
 * client's: POST /v1/GetTreatments answers a fixed answer of the delivery scenario's shape (2
 * surfaces, 3 treatments each, with rendered content) after reading the body; nothing else.
 */
export function stubAnswer(): string {
  const responseId = randomUUID();
  const userTreatments = ['home', 'side'].flatMap((surface) =>
    [1, 2, 3].map((rank) => {
      const treatmentId = `${surface}${rank}00000000000000000000000`.slice(0, 26);
      return {
        treatmentId,
        treatmentTrackingId: `${treatmentId}_${responseId}`,
        surface,
        rank: String(rank),
        treatmentType: 'banner',
        treatmentContent: JSON.stringify({
          title: `Offer ${rank} on ${surface}`,
          body: 'Members save 20 % this week on everything in the spring collection.',
          cta: 'Shop now',
        }),
        contentLanguageCode: 'en',
      };
    }),
  );
  return JSON.stringify({ responseId, userTreatments });
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const answer = stubAnswer();
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/readyz') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(process.env.STUB_PORT), '127.0.0.1');
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}
