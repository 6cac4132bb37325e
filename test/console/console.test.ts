import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, waitUntil } from '../helpers/context.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { ConsoleDriver, gzippedBytes, launchConsoleBrowser } from './console-driver.js';
import { driveReportTraffic } from './report-traffic.js';

/** The real console, built and served by the real service, driven in Debian's Chromium; screenshots go to test-artifacts/console/. */
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'console');
const BUDGET_GZIP_BYTES = 300 * 1024;
const TIMING_RUNS = 3;

let s: TestService;
let browser: Browser;
let page: Page;
let ui: ConsoleDriver;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  execFileSync('bash', ['infra/scripts/ensure-chromium.sh'], { stdio: 'inherit' });
  execFileSync('bash', ['infra/scripts/ensure-console-built.sh'], { stdio: 'inherit' });
  s = await startTestService();
  ({ browser, page } = await launchConsoleBrowser());
  ui = new ConsoleDriver(page, s.baseUrl, ARTIFACTS);
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

const api = (path: string, body: unknown, headers: Record<string, string>) => s.post(path, body, headers);
const adminApi = (op: string, body: unknown) => api(`/admin/v1/${op}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

describe('the web console', { timeout: 240_000 }, () => {
  let managementKey = '';
  let managementKeyId = '';
  let treatmentId = '';
  let logKey = '';
  let deliveryKey = '';
  const mgmt = (op: string, body: Record<string, unknown>) => api(`/v1/${op}`, { projectId: 'shop', ...body }, { 'x-api-key': managementKey });
  const getTreatments = (userId: string) =>
    api('/v1/GetTreatments', { projectId: 'shop', userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 1 }] }, { 'x-api-key': deliveryKey });

  it('signs in with the admin token, creates a project and issues a key whose secret is shown once', async () => {
    await page.goto(`${s.baseUrl}/console/`);
    await page.getByRole('heading', { name: 'Treatment Delivery Service console' }).waitFor();
    await ui.capture('01-sign-in');
    // Keyboard only: the focus order follows the form, and Enter signs in.
    expect(await ui.tabOrder(5)).toEqual(['a TREATMENT_MANAGEMENT key (one project)', 'API key', 'Project id', 'Your name', 'Sign in']);
    await page.getByLabel('a TREATMENT_MANAGEMENT key (one project)').focus();
    await page.keyboard.press('ArrowDown');
    expect(await ui.focusedLabel()).toBe('the admin token (every project)');
    await page.keyboard.press('Tab');
    await page.keyboard.type(ADMIN_TOKEN);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ada Admin');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Projects and keys' }).waitFor();
    await page.getByLabel('Project id', { exact: true }).fill('shop');
    await page.getByLabel('Display name', { exact: true }).fill('The shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Project shop' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('tds-console-session'))).toContain('"projectId":"shop"');
    expect(await page.evaluate(() => localStorage.length)).toBe(0);

    await page.getByLabel('Description', { exact: true }).fill('console e2e');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByTestId('new-key-secret');
    await secret.waitFor();
    managementKey = (await secret.textContent())!.trim();
    managementKeyId = (await page.locator('.secret p code').textContent())!.trim();
    expect(managementKey.length).toBeGreaterThan(20);
    await page.getByRole('cell', { name: 'console e2e' }).waitFor();
    await ui.capture('02-projects-and-keys');
    await ui.signOut();
  });

  it('signs in with a management key and builds the catalogue', async () => {
    await ui.signIn('key', managementKey, 'shop', 'Ada');
    await page.getByRole('heading', { level: 1, name: 'Treatments' }).waitFor();
    await page.getByText('No treatment yet').waitFor();
    await ui.go('Catalogue');
    await page.getByText('No surface yet.').waitFor();
    // An API error is shown next to the field its details name.
    await page.getByLabel('Surface name', { exact: true }).fill('not a name!');
    await page.getByRole('button', { name: 'Add surface' }).click();
    const surfaceField = page.locator('.field', { has: page.getByLabel('Surface name', { exact: true }) });
    await surfaceField.locator('.field-error').waitFor();
    expect(await page.getByLabel('Surface name', { exact: true }).getAttribute('aria-describedby')).toContain('-err');
    await page.getByLabel('Surface name', { exact: true }).fill('home');
    await page.getByRole('button', { name: 'Add surface' }).click();
    await page.getByRole('list', { name: 'Surfaces' }).getByText('home').waitFor();

    await page.getByLabel('Property name', { exact: true }).fill('plan');
    await page.getByRole('button', { name: 'Add user property' }).click();
    await page.getByRole('cell', { name: 'user property plan' }).waitFor();

    await page.getByLabel('Type name', { exact: true }).fill('banner');
    await page.getByRole('checkbox', { name: 'home' }).check();
    await page.getByRole('button', { name: 'Add treatment type' }).click();
    await page.getByRole('cell', { name: /^banner/ }).waitFor();
    // An API error lands next to the field it names: the same name again is refused.
    await page.getByLabel('Type name', { exact: true }).fill('banner');
    await page.getByRole('button', { name: 'Add treatment type' }).click();
    await page.locator('.error-banner').first().waitFor();
    await ui.capture('03-catalogue');
  });

  it('creates a treatment with two rules, checks values as they are typed, and publishes it', async () => {
    await ui.go('Treatments');
    await page.getByRole('button', { name: 'New treatment' }).click();
    await page.getByRole('heading', { name: 'New treatment' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Welcome back');
    await page.getByLabel('Treatment type', { exact: true }).selectOption('banner');
    await page.getByLabel('title (en)', { exact: true }).fill('Welcome back, gold member!');
    await page.getByText('26 / 80').waitFor();
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.getByRole('button', { name: 'Add rule' }).click();
    await ui.selectByText('Rule 1 data field', 'user property plan');
    await page.getByLabel('Rule 1 condition', { exact: true }).selectOption('EQUALS');
    await page.getByLabel('Rule 1 value', { exact: true }).fill('gold');
    await ui.selectByText('Rule 2 data field', 'VIEWED on home · daily count LAST_7D');
    // Only the conditions an integer allows are offered.
    const offered = await page.getByLabel('Rule 2 condition', { exact: true }).locator('option').allTextContents();
    expect(offered).toContain('<');
    expect(offered).not.toContain('contains');
    await page.getByLabel('Rule 2 condition', { exact: true }).selectOption('LESS_THAN');
    await page.getByLabel('Rule 2 value', { exact: true }).fill('three');
    await page.getByText('must be a number').waitFor();
    await page.getByLabel('Rule 2 value', { exact: true }).fill('3');
    await expect.poll(() => page.getByText('must be a number').count()).toBe(0);
    await page.getByLabel('Rule 2 when data is missing', { exact: true }).selectOption('EVALUATE_TO_ELIGIBLE');
    await page.getByLabel('Tags', { exact: true }).fill('welcome, gold');
    await page.getByLabel('Mutual exclusion group', { exact: true }).fill('hero');
    await page.getByLabel('Publish now').check();
    await ui.capture('04-treatment-form');
    await page.getByRole('button', { name: 'Create treatment' }).click();
    await page.getByRole('heading', { level: 2, name: /Welcome back/ }).waitFor();
    await page.locator('h2 .badge', { hasText: 'LIVE' }).waitFor();
    treatmentId = page.url().split('/').pop()!;
    await ui.capture('05-treatment-detail');

    // The change carries the console as its source and the operator's name.
    const stored = await api('/v1/GetTreatment', { projectId: 'shop', treatmentId }, { 'x-api-key': managementKey });
    expect(stored.body.treatment).toMatchObject({ lastModifiedBy: 'Ada', modificationSource: 'TDS_CONSOLE', status: 'LIVE' });
    expect(stored.body.treatment.versions[0].eligibilityRules.rules).toHaveLength(2);

    // An edit makes version 2, and the history says what changed.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit Welcome back' }).waitFor();
    expect(await page.getByLabel('Rule 1 value', { exact: true }).inputValue()).toBe('gold');
    await page.getByLabel('title (en)', { exact: true }).fill('Welcome back, {{plan}} member!');
    await page.getByLabel('Publish the new version').check();
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.locator('.error-banner, h2 .badge').first().waitFor();
    expect(await page.locator('.error-banner').count(), (await page.locator('.error-banner').allTextContents()).join()).toBe(0);
    await page.locator('tbody tr').nth(1).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(2);
    expect(await page.locator('tbody tr').first().locator('td').last().textContent()).toBe('content');

    await ui.go('Treatments');
    await page.getByRole('link', { name: 'Welcome back' }).waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('PAUSED');
    await page.getByText('No treatment matches these filters.').waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('LIVE');
    await page.getByRole('link', { name: 'Welcome back' }).waitFor();
    await ui.capture('06-treatments');
  });

  it('shows in the user inspector which treatment a user gets, and why', async () => {
    logKey = (await adminApi('CreateApiKey', { projectId: 'shop', permissions: ['LOG_EVENTS'] })).body.key as string;
    deliveryKey = (await adminApi('CreateApiKey', { projectId: 'shop', permissions: ['DELIVERY'] })).body.key as string;
    const logged = await api(
      '/v1/LogEvents',
      {
        projectId: 'shop',
        userId: 'u1',
        events: [{ eventName: 'app_open', clientEventTimestamp: new Date().toISOString(), userProperties: { plan: { stringValue: 'gold' } } }],
      },
      { 'x-api-key': logKey },
    );
    expect(logged.status, JSON.stringify(logged.body)).toBe(200);
    await waitUntil(
      async () => (await adminApi('GetUserProfile', { projectId: 'shop', userId: 'u1' })).body?.profile?.userProperties?.plan === 'gold',
      120_000,
      200,
    );
    // A real delivery, so that the inspector has a decision to show.
    const delivered = await getTreatments('u1');
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect(delivered.body.userTreatments.map((t: { treatmentId: string }) => t.treatmentId)).toEqual([treatmentId]);
    await waitUntil(async () => ((await mgmt('ListDecisions', { userId: 'u1' })).body.decisions ?? []).length > 0, 120_000, 200);

    await ui.go('User inspector');
    await page.getByLabel('User id', { exact: true }).fill('u1');
    await page.getByRole('button', { name: 'Inspect' }).click();
    const verdict = page.getByTestId(`explain-home-${treatmentId}`);
    await verdict.waitFor();
    expect(await verdict.locator('.badge').first().textContent()).toBe('shown');
    expect(await verdict.locator('tbody tr').count()).toBe(2);
    expect(await verdict.locator('tbody tr td:last-child .badge').allTextContents()).toEqual(['yes', 'yes']);
    expect(await verdict.textContent()).toContain('gold');
    // The user's recent decisions, newest first: time, surface, treatment, version, rank, outcome.
    const recent = page.getByTestId('recent-decisions');
    await recent.locator('tbody tr').first().waitFor();
    const cells = (await recent.locator('tbody tr').first().locator('td').allTextContents()).map((c) => c.trim());
    expect(cells[0]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    expect(cells.slice(1)).toEqual(['home', `Welcome back #${treatmentId}`, '2', '1', 'RETURNED']);

    await page.getByLabel('Treatment', { exact: true }).selectOption(treatmentId);
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    const preview = page.getByTestId('preview-result');
    await preview.waitFor();
    expect(await preview.textContent()).toContain('Welcome back, gold member!'); // {{plan}} filled from the profile
    expect(await preview.locator('.badge.ok').first().textContent()).toBe('eligible');
    await ui.capture('07-user-inspector');

    await page.getByLabel('User id', { exact: true }).fill('u2');
    await page.getByRole('button', { name: 'Inspect' }).click();
    await page.getByText('a rule is not met').waitFor();
    expect(await page.getByTestId(`explain-home-${treatmentId}`).locator('.badge').first().textContent()).toBe('not shown');
    await page.getByText('No decision recorded for this user yet.').waitFor();
  });

  it('registers an event schema, sets it as the target action with a holdout, and charts the report', async () => {
    // Without a target action the report says so, and has no chart.
    await ui.go('Reports');
    await ui.selectByText('Treatment', 'Welcome back');
    await page.getByRole('button', { name: 'Show report' }).click();
    await page.getByTestId('no-target-action').waitFor();
    expect(await page.getByTestId('uplift-chart').count()).toBe(0);
    await ui.capture('11-reports-no-target-action');

    await ui.go('Catalogue');
    // Ingestion registered the event name the inspector's test logged.
    await page.getByRole('cell', { name: 'event app_open' }).waitFor();
    await page.getByLabel('Event name', { exact: true }).fill('purchase');
    await page.getByRole('button', { name: 'Add event schema' }).click();
    await page.getByRole('cell', { name: 'event purchase' }).waitFor();
    const schemas = (await mgmt('GetEventSchemas', {})).body.eventSchemas as { eventId: string; eventName: string }[];
    const purchase = schemas.find((e) => e.eventName === 'purchase')!;
    expect(purchase).toBeTruthy();
    // The group the treatment named, with its member; the surface's provisioned aggregations
    // filled from history (the page refreshes while a backfill is under way).
    const groups = page.getByRole('region', { name: /^Mutual exclusion groups/ });
    await groups.getByRole('cell', { name: 'hero' }).waitFor();
    expect(await groups.locator('tbody tr td').last().textContent()).toBe('Welcome back (LIVE)');
    const viewedRow = page.getByRole('row', { name: /VIEWED on home · daily count LAST_7D/ });
    await viewedRow.getByText('complete', { exact: true }).waitFor();
    await page
      .getByRole('row', { name: /user property plan/ })
      .getByText('none needed', { exact: true })
      .waitFor();
    await ui.capture('12-catalogue-event-schemas');

    await ui.go('Treatments');
    await page.getByRole('link', { name: 'Welcome back' }).click();
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit Welcome back' }).waitFor();
    // Every user is eligible from now on, so that the groups fill with whoever asks.
    await page.getByRole('button', { name: 'Remove rule 2' }).click();
    await page.getByRole('button', { name: 'Remove rule 1' }).click();
    await ui.selectByText('Target action', 'purchase');
    await page.getByLabel('Holdout %', { exact: true }).fill('50');
    await page.getByLabel('Publish the new version').check();
    await ui.capture('12b-treatment-form-target-action');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.getByRole('heading', { level: 2, name: /Welcome back/ }).waitFor();
    await page.getByText(`event purchase #${purchase.eventId}`).waitFor();
    const stored = (await mgmt('GetTreatment', { treatmentId })).body.treatment;
    expect(stored.holdoutPercentage).toBe(50);
    const newestVersion = (stored.versions as { versionNumber: number; targetAction?: unknown }[]).reduce((a, b) =>
      b.versionNumber > a.versionNumber ? b : a,
    );
    expect(newestVersion.targetAction).toEqual({ eventId: purchase.eventId });

    // A few users of each group ask, some convert; the report counts them.
    const final = await driveReportTraffic({ treatmentId, getTreatments, api, mgmt, deliveryKey, logKey });

    await ui.go('Reports');
    await ui.selectByText('Treatment', 'Welcome back');
    await page.getByLabel('Attribution window (days)', { exact: true }).fill('7');
    await page.getByRole('button', { name: 'Show report' }).click();
    const chart = page.getByTestId('uplift-chart');
    await chart.waitFor();
    expect(await page.getByTestId('no-target-action').count()).toBe(0);
    const rows = page.getByTestId('report').locator('tbody tr');
    expect(await rows.count()).toBe(2);
    const holdoutRow = (await rows.nth(1).locator('th, td').allTextContents()).map((c) => c.trim());
    const h = final.groups.find((g: { group: string }) => g.group === 'HOLDOUT');
    expect(holdoutRow.slice(0, 5)).toEqual(['HOLDOUT', String(h.users), String(h.impressions), String(h.clicks), String(h.conversions)]);
    // The chart: two bars, a zero line and the interval around the uplift.
    expect(await chart.locator('svg rect').count()).toBe(2);
    // (lines have no area, so they are attached rather than "visible")
    await chart.getByTestId('zero-line').waitFor({ state: 'attached' });
    const attr = async (sel: string, a: string) => Number(await chart.locator(sel).getAttribute(a));
    const [x1, x2, cx] = [await attr('[data-testid="interval"]', 'x1'), await attr('[data-testid="interval"]', 'x2'), await attr('svg circle', 'cx')];
    expect(x1).toBeLessThanOrEqual(cx);
    expect(cx).toBeLessThanOrEqual(x2);
    expect(await chart.locator('svg').getAttribute('aria-label')).toMatch(/95 % interval/);
    const { low, high } = final.uplift.confidenceInterval95;
    const verdictText = await page.getByTestId('verdict').textContent();
    expect(verdictText).toContain(low > 0 || high < 0 ? 'The interval excludes 0.' : 'The interval includes 0.');
    await ui.capture('13-reports');
  });

  it('fits a phone-sized window', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await ui.go('Treatments');
    await page.getByRole('link', { name: 'Welcome back' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    await ui.capture('08-treatments-phone');
    await ui.go('User inspector');
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    await ui.go('Reports');
    await ui.selectByText('Treatment', 'Welcome back');
    await page.getByRole('button', { name: 'Show report' }).click();
    await page.getByTestId('uplift-chart').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    await ui.capture('08b-reports-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('revokes a key, which is then refused, and shows the operations pages', async () => {
    await ui.signOut();
    expect(await page.evaluate(() => sessionStorage.getItem('tds-console-session'))).toBeNull();
    await ui.signIn('admin', ADMIN_TOKEN, 'shop', 'Ada Admin');
    await page.getByRole('heading', { name: 'Project shop' }).waitFor();
    await page.getByRole('button', { name: `Revoke key ${managementKeyId}` }).click();
    await page
      .getByRole('row', { name: new RegExp(managementKeyId) })
      .getByText(/^revoked/)
      .waitFor();
    const refused = await api('/v1/GetAllSurfaces', { projectId: 'shop' }, { 'x-api-key': managementKey });
    expect(refused.status).toBe(401);

    await ui.go('Operations');
    await page.getByRole('heading', { name: 'Change log of shop' }).waitFor();
    await page.getByRole('cell', { name: 'Ada', exact: true }).first().waitFor();
    await page.getByRole('link', { name: /queue dashboard/ }).waitFor();
    // The queue backlog: one row per queue, and the ingestion backlog against its limit.
    const queues = page.getByTestId('queue-stats');
    await queues.waitFor();
    expect(await queues.locator('tbody th').allTextContents()).toEqual(expect.arrayContaining(['events', 'interactions', 'aggregations']));
    // completed jobs are removed at once (their markers keep exactly-once): the counts are live work
    const { queues: stats } = (await adminApi('GetQueueStats', {})).body as { queues: { queue: string; waiting: number; completed: number }[] };
    expect(stats.some((q) => q.queue === 'events' && Number.isInteger(q.waiting) && Number.isInteger(q.completed))).toBe(true);
    expect(await page.getByTestId('ingest-backlog').textContent()).toMatch(/Ingestion backlog: [\d,]+ events of the [\d,]+ beyond which LogEvents answers 429/);
    await ui.capture('09-operations');

    // An admin works on a project's catalogue through a management key the console issues for
    // the session, and revokes at sign-out.
    await ui.go('Catalogue');
    await page.getByRole('list', { name: 'Surfaces' }).getByText('home').waitFor();
    const sessionKeys = async () =>
      ((await adminApi('ListApiKeys', { projectId: 'shop' })).body.apiKeys as any[]).filter((k) => k.description === 'web console session of Ada Admin');
    const issued = await sessionKeys();
    expect(issued).toHaveLength(1); // the page's parallel calls share one key
    expect(issued[0].revokeTime).toBeUndefined();
    await ui.signOut();
    await waitUntil(async () => (await sessionKeys())[0].revokeTime !== undefined, 30_000, 100);

    await ui.signIn('key', managementKey, 'shop', 'Ada');
    const banner = page.locator('.error-banner');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('401');
    await ui.capture('10-revoked-key-refused');
  });

  it('times each page from navigation to its content, written to test-artifacts/console/timings.json', async () => {
    await page.evaluate(() => sessionStorage.clear());
    await ui.signIn('admin', ADMIN_TOKEN, 'shop', 'Ada Admin');
    await page.getByRole('heading', { name: 'Project shop' }).waitFor();
    const report = await ui.timePages(TIMING_RUNS);
    writeFileSync(join(ARTIFACTS, 'timings.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(
      `console page timings (ms, median of ${TIMING_RUNS}):`,
      JSON.stringify(report.pages, (k, v) => (k === 'runs' ? undefined : v)),
    );
    for (const t of Object.values(report.pages)) expect([...t.runs.loadMs, ...t.runs.inAppMs].every((ms) => Number.isFinite(ms) && ms >= 0)).toBe(true);
  });

  it('has no serious or critical accessibility violation on any page', () => {
    expect(ui.a11y, JSON.stringify(ui.a11y, null, 2)).toEqual([]);
  });

  it('ships at most 300 KB of gzipped JavaScript', () => {
    const total = gzippedBytes(join(process.cwd(), 'dist', 'console', 'assets'), '.js');
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  });
});
