import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManagementClient } from '../../client/src/management.js';
import { waitUntil } from '../helpers/context.js';
import { freePort } from '../helpers/child-service.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';
import { launchConsoleBrowser } from '../console/console-driver.js';
import { NO_LOAD_SHEDDING, pointedAt, readmeBlocks, seedReadmeCatalogue } from './readme-examples.js';

/**
 * The built client in Chromium, on a page served from another origin than the service's: with
 * that origin in CORS_ORIGINS, GetTreatments, LogEvents and interactions go through with client
 * keys (and events queued when the page is left go with keepalive), while a management call from
 * the same page is refused by the browser. A page of an origin not listed gets nothing.
 */
const BUNDLE = join(process.cwd(), 'client/dist/browser/tds-client.js');
let s: TestService;
let pages: Server;
let pagePort: number;
let browser: Browser;
let page: Page;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };
const field: Record<string, string> = {};
/** The README's browser example, pointed at the test service with the `demo` project's keys. */
let readmePage = '';
let demoDeliveryKey = '';

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>shop</title></head><body><h1>shop</h1>
<script type="module">import * as tds from '/tds-client.js'; window.tds = tds; window.tdsReady = true;</script></body></html>`;

beforeAll(async () => {
  execFileSync('bash', ['infra/scripts/ensure-chromium.sh'], { stdio: 'inherit' });
  execFileSync('bash', ['infra/scripts/ensure-client-built.sh'], { stdio: 'inherit' });
  pagePort = await freePort();
  pages = createServer((req, res) => {
    if (req.url === '/tds-client.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(BUNDLE));
    else res.writeHead(200, { 'content-type': 'text/html' }).end(req.url === '/readme.html' ? readmePage : PAGE);
  });
  await new Promise<void>((resolve) => pages.listen(pagePort, '127.0.0.1', resolve));
  s = await startTestService({ CORS_ORIGINS: `http://localhost:${pagePort}`, ...NO_LOAD_SHEDDING });
  keys = await projectWithKeys(s, 'web');
  const mgmt = createManagementClient({ baseUrl: s.baseUrl, projectId: 'web', apiKey: keys.management });
  await mgmt.insertSurface({ name: 'hero' });
  await mgmt.insertTreatmentType({
    treatmentTypeName: 'hero',
    lastModifiedBy: 'ci',
    surfaces: [{ surfaceName: 'hero' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 80, isPerLanguage: false }],
  });
  await mgmt.insertTreatment({
    name: 'spring sale',
    description: 'd',
    treatmentTypeName: 'hero',
    lastModifiedBy: 'ci',
    startTimestamp: '2026-01-01T00:00:00Z',
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Spring sale' }] },
  });
  const made = await mgmt.getDataFields({
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'page_view', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      { treatmentDataFieldParams: { surfaceName: 'hero', treatmentInteractionType: 'VIEWED', dailyCountAggregation: { windowName: 'LAST_1D' } } },
    ],
  });
  [field.pageViews, field.viewed] = made.dataFields.map((f) => f.dataFieldId);
  await readmeProject();
  ({ browser, page } = await launchConsoleBrowser());
}, 300_000);

/** The curl tour's `demo` project, enough of it for the README's example, and the page of that example. */
async function readmeProject(): Promise<void> {
  const demo = await projectWithKeys(s, 'demo');
  demoDeliveryKey = demo.delivery;
  const mgmt = createManagementClient({ baseUrl: s.baseUrl, projectId: 'demo', apiKey: demo.management });
  await seedReadmeCatalogue(mgmt);
  field.demoPageViews = (
    await mgmt.getDataFields({
      dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'page_view', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
    })
  ).dataFields[0].dataFieldId;
  const [example] = readmeBlocks('html');
  if (!example.includes("'DELIVERY-KEY'") || !example.includes("'LOG-EVENTS-KEY'"))
    throw new Error('the README example no longer names DELIVERY-KEY and LOG-EVENTS-KEY');
  const script = pointedAt(example, s.baseUrl).replace("'DELIVERY-KEY'", `'${demo.delivery}'`).replace("'LOG-EVENTS-KEY'", `'${demo.logEvents}'`);
  readmePage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>readme</title></head><body>\n${script}</body></html>`;
}

afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
});

async function open(origin: string): Promise<void> {
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => (window as any).tdsReady === true);
}

async function countOf(userId: string, dataFieldId: string): Promise<unknown> {
  return (await s.admin('GetUserProfile', { projectId: 'web', userId })).body.profile.dataFields[dataFieldId];
}

describe('the client in a browser page of another origin', { timeout: 120_000 }, () => {
  it('calls GetTreatments, LogEvents and LogTreatmentInteraction with client keys', async () => {
    await open(`http://localhost:${pagePort}`);
    const result = await page.evaluate(
      async ({ baseUrl, delivery, logEvents }) => {
        const { TdsClient, contentOf } = (window as any).tds;
        // a cold browser's first call pays a preflight and a connection on a shared machine
        const c = new TdsClient({ baseUrl, projectId: 'web', deliveryKey: delivery, eventsKey: logEvents, flushAt: 100, timeoutMs: 10_000 });
        const answer = await c.getTreatments({ userId: 'visitor', surfaces: [{ surface: 'hero' }] });
        c.track({ userId: 'visitor', eventName: 'page_view', eventProperties: { path: '/' } });
        c.track({ userId: 'visitor', eventName: 'page_view', eventProperties: { path: '/sale' } });
        c.viewed(answer.userTreatments[0]);
        await c.flush();
        return {
          fallback: answer.fallback,
          treatments: answer.userTreatments.map((t: any) => [t.treatmentId.length > 0, t.userId, contentOf(t).title, t.treatmentTrackingId.includes('_')]),
          stats: c.stats(),
        };
      },
      { baseUrl: s.baseUrl, delivery: keys.delivery, logEvents: keys.logEvents },
    );
    expect(result.fallback).toBe(false);
    expect(result.treatments).toEqual([[true, 'visitor', 'Spring sale', true]]);
    expect(result.stats).toMatchObject({ sent: 3, failed: 0, dropped: 0 });
    await waitUntil(async () => (await countOf('visitor', field.pageViews)) === '2', 30_000, 100);
    await waitUntil(async () => (await countOf('visitor', field.viewed)) === '1', 30_000, 100);
  });

  it('a management call from the same page is refused by the browser', async () => {
    await open(`http://localhost:${pagePort}`);
    const outcome = await page.evaluate(
      async ({ baseUrl, management }) => {
        try {
          const res = await fetch(`${baseUrl}/v1/GetAllSurfaces`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': management },
            body: JSON.stringify({ projectId: 'web' }),
          });
          return `answered ${res.status}`;
        } catch (err) {
          return `refused: ${(err as Error).name}`;
        }
      },
      { baseUrl: s.baseUrl, management: keys.management },
    );
    expect(outcome).toBe('refused: TypeError');
  });

  it('events still queued when the page is left go with keepalive', async () => {
    await open(`http://localhost:${pagePort}`);
    await page.evaluate(
      ({ baseUrl, logEvents }) => {
        const { TdsClient } = (window as any).tds;
        const c = new TdsClient({ baseUrl, projectId: 'web', eventsKey: logEvents, flushAt: 1000, flushIntervalMs: 600_000 });
        for (let i = 0; i < 3; i++) c.track({ userId: 'leaver', eventName: 'page_view' });
        (window as any).left = c;
      },
      { baseUrl: s.baseUrl, logEvents: keys.logEvents },
    );
    await page.goto('about:blank');
    await waitUntil(async () => (await countOf('leaver', field.pageViews)) === '3', 30_000, 100);
  });

  it("the README's browser example shows the treatment and tracks the page view", async () => {
    // The example keeps the default 300 ms timeout: a call from this origin first, so the browser
    // has its preflight answer and a connection, and the service the project's compiled catalogue
    // (as for a site's visitor after the first page).
    await open(`http://localhost:${pagePort}`);
    await page.evaluate(
      async ({ baseUrl, key }) => {
        await fetch(`${baseUrl}/v1/GetTreatments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ projectId: 'demo', userId: 'warm-up', surfaces: [{ surface: 'home_banner' }] }),
        });
      },
      { baseUrl: s.baseUrl, key: demoDeliveryKey },
    );
    await page.goto(`http://localhost:${pagePort}/readme.html`);
    await page.getByText('Hi friend').waitFor();
    await waitUntil(
      async () => (await s.admin('GetUserProfile', { projectId: 'demo', userId: 'u1' })).body.profile.dataFields[field.demoPageViews] === '1',
      30_000,
      100,
    );
  });

  it('a page of an origin CORS_ORIGINS does not list gets nothing: its client answers the fallback', async () => {
    await open(`http://127.0.0.1:${pagePort}`);
    const result = await page.evaluate(
      async ({ baseUrl, delivery }) => {
        const { TdsClient } = (window as any).tds;
        const c = new TdsClient({
          baseUrl,
          projectId: 'web',
          deliveryKey: delivery,
          timeoutMs: 10_000,
          fallback: { userTreatments: [{ treatmentId: 'house', surface: 'hero' }] },
        });
        const a = await c.getTreatments({ userId: 'visitor', surfaces: [{ surface: 'hero' }] });
        return { fallback: a.fallback, kind: a.error?.kind, ids: a.userTreatments.map((t: any) => t.treatmentId) };
      },
      { baseUrl: s.baseUrl, delivery: keys.delivery },
    );
    expect(result).toEqual({ fallback: true, kind: 'network', ids: ['house'] });
  });
});
