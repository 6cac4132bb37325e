/**
 * Writes openapi.json at the repository root: the API description the base listener serves at
 * `/openapi.json`, committed so a team can generate a client from it without running the service.
 * `npm run openapi` (Redis must answer at REDIS_URL: the app is built on its real services, under a
 * throw-away key prefix). test/integration/openapi.test.ts fails when the file is out of date.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../../shared/platform/config.js';
import { createLogger } from '../../shared/platform/logger.js';
import { openApiServices } from '../compose-api.js';
import { buildApp } from '../app.js';

/** The document as the server serves it, as the committed file holds it (2-space JSON and a newline). */
export function openApiText(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, REDIS_PREFIX: `openapi-${randomBytes(4).toString('hex')}`, LOG_LEVEL: 'warn', CORS_ORIGINS: '' });
  const api = openApiServices(config, createLogger(config.logLevel));
  try {
    const app = await buildApp(api.services, { listener: 'base' });
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    const file = new URL('../../openapi.json', import.meta.url);
    writeFileSync(file, openApiText(res.json()));
    console.error(`wrote ${file.pathname}`);
    await app.close();
  } finally {
    await api.close();
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
