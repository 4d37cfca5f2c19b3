// The web console in a real browser (Debian's chromium through playwright-core) against a real gateway
// on a real port, as the tests under test/web/ use it: the gateway started, Chromium launched, a signed-in
// page per token that records what left the origin and what the page reported, and axe-core's verdict.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { ensureBuilt } from '../../web/ensure-built.mjs';
import { startTestApp, type TestApp, type TestAppOptions } from './harness.js';

export const CHROMIUM = process.env.FAIRWAY_CHROMIUM ?? '/usr/bin/chromium';
/** Whether the browser tests can run here; on CI they must, so a missing chromium fails the run. */
export const chromiumAvailable = fs.existsSync(CHROMIUM);
if (!chromiumAvailable && process.env.CI === 'true')
  throw new Error(`CI=true and no chromium at ${CHROMIUM}`);
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Chromium as every console test and the screenshots run it: headless, no sandbox, nothing in the background. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });

export interface OpenOptions {
  /** The new context's options, over a 1280×800 viewport. */
  context?: BrowserContextOptions;
  /** Sign in by clicking "Sign in" (the default) or by pressing Enter in the token box. */
  signIn?: 'click' | 'enter';
  /** Called with the page before it navigates, to listen for what the sign-in itself does. */
  beforeGoto?: (page: Page) => void;
}

export interface ConsoleBrowser {
  t: TestApp;
  browser: Browser;
  /** The gateway's origin, where the console is served. */
  origin: string;
  /** A new context's page at `path`, signed in with `token`, its main navigation shown. */
  open(token: string, path?: string, options?: OpenOptions): Promise<Page>;
  /** axe-core's serious and critical violations on the page (only `rules` if given), one line each. */
  axe(page: Page, rules?: string[]): Promise<string[]>;
  /** Requests the pages made to anywhere but the gateway. */
  foreign: string[];
  /** Script errors and CSP violations the pages reported. */
  pageErrors: string[];
  close(): Promise<void>;
}

/** The console built, a gateway with the demo data (`app` passed to startTestApp), and Chromium. */
export async function startConsole(options: { app?: TestAppOptions } = {}): Promise<ConsoleBrowser> {
  ensureBuilt();
  const t = await startTestApp(options.app);
  let browser: Browser;
  try {
    browser = await launchChromium();
  } catch (error) {
    await t.close();
    throw error;
  }
  const origin = t.url.replace(/\/graphql$/, '');
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  const open = async (token: string, path = '/', opts: OpenOptions = {}): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...opts.context });
    const page = await context.newPage();
    opts.beforeGoto?.(page);
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith(origin.replace('http', 'ws')))
        foreign.push(r.url());
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text()))
        pageErrors.push(m.text());
    });
    // Each step fails on its own, well inside the test's timeout, with what the page showed.
    page.setDefaultTimeout(10_000);
    await page.goto(`${origin}${path}`);
    let step = 'no sign-in form';
    try {
      const box = page.getByRole('textbox', { name: 'API token' });
      await box.fill(token);
      if (opts.signIn === 'enter') await box.press('Enter');
      else await page.getByRole('button', { name: 'Sign in' }).click();
      step = 'signed in, no navigation';
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
    } catch (error) {
      const shown =
        (await page
          .locator('body')
          .textContent()
          .catch(() => null)) ?? '(no page)';
      throw new Error(`${step}; the page showed: ${shown.slice(0, 500)}`, { cause: error });
    }
    return page;
  };

  const axe = async (page: Page, rules?: string[]): Promise<string[]> => {
    // Through the DevTools protocol (as an extension would), not an inline script the console's CSP refuses.
    await page.evaluate(axeSource);
    const runOptions = rules
      ? `{ runOnly: { type: 'rule', values: ${JSON.stringify(rules)} }, resultTypes: ['violations'] }`
      : `{ resultTypes: ['violations'] }`;
    const result = (await page.evaluate(`axe.run(document, ${runOptions})`)) as {
      violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
    };
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  };

  const close = async () => {
    try {
      await browser.close();
    } finally {
      await t.close();
    }
  };

  return { t, browser, origin, open, axe, foreign, pageErrors, close };
}
