import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's Chromium (package `chromium`), installed by infra/scripts/ensure-chromium.sh. */
const CHROMIUM = '/usr/bin/chromium';

export interface A11yFinding {
  page: string;
  id: string;
  impact: string;
  help: string;
  nodes: string[];
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Chromium with one 1280 × 900 page whose API calls are counted (see `usableAt`). */
export async function launchConsoleBrowser(): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Every API call the console makes, counted, so that a page's load can be timed to the end of its calls.
  await context.addInitScript(() => {
    const w = window as unknown as { __calls: { inFlight: number; done: number }; fetch: typeof fetch };
    w.__calls = { inFlight: 0, done: 0 };
    const original = w.fetch.bind(window);
    w.fetch = async (...args: Parameters<typeof fetch>) => {
      w.__calls.inFlight++;
      try {
        return await original(...args);
      } finally {
        w.__calls.inFlight--;
        w.__calls.done++;
      }
    };
  });
  const page = await context.newPage();
  page.setDefaultTimeout(45_000);
  page.on('dialog', (d) => void d.accept());
  return { browser, page };
}

/** The files of `dir` ending in `ext`, gzipped at level 9, in bytes. */
export function gzippedBytes(dir: string, ext: string): number {
  return readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .reduce((sum, f) => sum + gzipSync(readFileSync(join(dir, f)), { level: 9 }).length, 0);
}

/** The console's pages by their path and their heading. */
export const PAGE_TITLES = [
  ['projects', 'Projects and keys'],
  ['catalogue', 'Catalogue'],
  ['treatments', 'Treatments'],
  ['inspector', 'User inspector'],
  ['reports', 'Reports'],
  ['operations', 'Operations'],
] as const;

export interface PageTiming {
  /** medians, milliseconds */
  loadMs: number;
  inAppMs: number;
  /** the slowest run of either kind */
  maxMs: number;
  runs: { loadMs: number[]; inAppMs: number[] };
}

export interface TimingReport {
  measuredAt: string;
  machine: string;
  note: string;
  pages: Record<string, PageTiming>;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function summary(loadMs: number[], inAppMs: number[]): PageTiming {
  return {
    loadMs: Math.round(median(loadMs)),
    inAppMs: Math.round(median(inAppMs)),
    maxMs: Math.round(Math.max(...loadMs, ...inAppMs)),
    runs: { loadMs: loadMs.map(Math.round), inAppMs: inAppMs.map(Math.round) },
  };
}

/** What a test does with the console, as a user would: sign in, follow links, pick options. */
export class ConsoleDriver {
  /** axe-core's serious and critical findings of every captured page. */
  readonly a11y: A11yFinding[] = [];

  constructor(
    readonly page: Page,
    private readonly baseUrl: string,
    private readonly artifacts: string,
  ) {}

  /** A full-page screenshot, and axe-core's serious and critical findings for the page as it is. */
  async capture(name: string): Promise<void> {
    const page = this.page;
    await page.screenshot({ path: join(this.artifacts, `${name}.png`), fullPage: true });
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
    const result = (await page.evaluate(() => (window as any).axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'best-practice'] }))) as {
      violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[];
    };
    for (const v of result.violations) {
      if (v.impact === 'serious' || v.impact === 'critical')
        this.a11y.push({ page: name, id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) });
    }
  }

  async signIn(mode: 'admin' | 'key', secret: string, projectId: string, operator: string): Promise<void> {
    const page = this.page;
    await page.goto(`${this.baseUrl}/console/`);
    await page.getByRole('heading', { name: 'Treatment Delivery Service console' }).waitFor();
    await page.getByLabel(mode === 'admin' ? 'the admin token (every project)' : 'a TREATMENT_MANAGEMENT key (one project)').check();
    await page.getByLabel(mode === 'admin' ? 'Admin token' : 'API key', { exact: true }).fill(secret);
    await page.getByLabel(mode === 'admin' ? 'Project (optional)' : 'Project id', { exact: true }).fill(projectId);
    await page.getByLabel('Your name', { exact: true }).fill(operator);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  async signOut(): Promise<void> {
    await this.page.getByRole('button', { name: 'Sign out' }).click();
    await this.page.getByRole('heading', { name: 'Treatment Delivery Service console' }).waitFor();
  }

  /** The label (or text) of the focused element. */
  focusedLabel(): Promise<string> {
    return this.page.evaluate(() => {
      const el = document.activeElement as HTMLInputElement | null;
      return el ? (el.labels?.[0]?.textContent ?? el.textContent ?? '').trim() : '';
    });
  }

  /** Presses Tab `n` times: what each press focused. */
  async tabOrder(n: number): Promise<string[]> {
    const order: string[] = [];
    for (let i = 0; i < n; i++) {
      await this.page.keyboard.press('Tab');
      order.push(await this.focusedLabel());
    }
    return order;
  }

  /** Follows the page's link in the navigation. */
  async go(pageTitle: string): Promise<void> {
    await this.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: pageTitle, exact: true }).click();
    await this.page.getByRole('heading', { level: 1, name: pageTitle }).waitFor();
  }

  /** Selects the option of a labelled select whose text starts with `prefix`. */
  async selectByText(label: string, prefix: string): Promise<void> {
    const select = this.page.getByLabel(label, { exact: true });
    const find = () =>
      select.evaluate(
        (el, p) => [...(el as unknown as { options: { text: string; value: string }[] }).options].find((o) => o.text.startsWith(p))?.value,
        prefix,
      );
    // The options may still be loading.
    await expect.poll(find, { message: `an option of "${label}" starting with "${prefix}"`, timeout: 30_000 }).toBeTruthy();
    await select.selectOption((await find())!);
  }

  /**
   * The page's time (performance.now(), from navigation start) at the first frame where its
   * heading is shown, at least one API call was made and all have answered, and no loading note is left.
   */
  async usableAt(title: string): Promise<number> {
    const handle = await this.page.waitForFunction(
      (t) => {
        const w = window as unknown as { __calls?: { inFlight: number; done: number } };
        const ready =
          document.querySelector('main h1')?.textContent === t &&
          w.__calls !== undefined &&
          w.__calls.done > 0 &&
          w.__calls.inFlight === 0 &&
          !document.querySelector('main .loading');
        return ready ? performance.now() : false;
      },
      title,
      { polling: 'raf' },
    );
    return (await handle.jsonValue()) as number;
  }

  /** From the click on a page's link (made from another page) to its content, in ms. */
  private async timeLink(title: string): Promise<number> {
    const other = title === 'Operations' ? 'Catalogue' : 'Operations';
    await this.go(other);
    await this.usableAt(other);
    const link = this.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: title, exact: true });
    const clickedAt = await link.evaluate((a) => {
      const t = performance.now();
      (a as HTMLElement).click();
      return t;
    });
    return (await this.usableAt(title)) - clickedAt;
  }

  /** Every page (signed in as admin), `runs` times: a full load from navigation start, and from its link. */
  async timePages(runs: number): Promise<TimingReport> {
    const pages: Record<string, PageTiming> = {};
    for (const [slug, title] of PAGE_TITLES) {
      const loadMs: number[] = [];
      const inAppMs: number[] = [];
      for (let run = 0; run < runs; run++) {
        // the document, the bundle, and every call the page makes
        await this.page.goto(`${this.baseUrl}/console/${slug}`, { waitUntil: 'commit' });
        loadMs.push(await this.usableAt(title));
        inAppMs.push(await this.timeLink(title));
      }
      pages[title] = summary(loadMs, inAppMs);
    }
    return {
      measuredAt: new Date().toISOString(),
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`,
      note: `milliseconds until the page heading is shown and every API call the page made has answered and been rendered; loadMs from navigation start (a full load), inAppMs from the click on its link; medians of ${runs} runs, and the slowest run`,
      pages,
    };
  }
}
