// The console at the sizes, schemes and inputs people use: a 390×844 phone without sideways scrolling,
// dark and light by prefers-color-scheme (axe's contrast check in both), and every action of the
// member's pages reached by keyboard alone (Tab, Enter, Space; no mouse event in these tests).
import type { BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';
import type { TestApp } from '../helpers/harness.js';

const MEMBER_PAGES: [string, string][] = [
  ['/', 'Queues'],
  ['/jobs', 'Jobs'],
  ['/submit', 'Submit a job'],
  ['/usage', 'Usage'],
];

describe.skipIf(!chromiumAvailable)('the console on a phone, in dark and light, by keyboard', () => {
  let web: ConsoleBrowser;
  let t: TestApp;

  /** Signed in as a member by keyboard: the token typed and Enter pressed, no click. */
  const signedIn = (options: BrowserContextOptions, path = '/'): Promise<Page> =>
    web.open(t.token('aurora-research', 'MEMBER'), path, { context: options, signIn: 'enter' });
  /** Tabs forward until the focused element matches, at most `limit` presses; fails otherwise. */
  const tabTo = async (
    page: Page,
    matches: (el: { tag: string; text: string; label: string }) => boolean,
  ) => {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const el = await page.evaluate(() => {
        const a = document.activeElement as HTMLElement | null;
        return {
          tag: a?.tagName.toLowerCase() ?? '',
          text: (a?.textContent ?? '').trim(),
          label:
            a?.getAttribute('aria-label') ?? (a as HTMLInputElement | null)?.labels?.[0]?.textContent ?? '',
        };
      });
      if (matches(el)) return el;
    }
    throw new Error('not reached by Tab within 60 presses');
  };

  beforeAll(async () => {
    web = await startConsole();
    t = web.t;
  }, 120_000);
  afterAll(() => web?.close());

  it('at 390×844 no page scrolls sideways and every navigation link is on screen', async () => {
    const page = await signedIn({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    for (const [path, heading] of MEMBER_PAGES) {
      await page.goto(`${web.origin}${path}`);
      await page.getByRole('heading', { name: heading }).first().waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} is ${width}px wide`).toBeLessThanOrEqual(390);
      for (const name of ['Overview', 'Jobs', 'Submit', 'Usage']) {
        const box = await page.getByRole('link', { name, exact: true }).boundingBox();
        expect(box, `${name} on ${path}`).not.toBeNull();
        expect(box!.x).toBeGreaterThanOrEqual(0);
        expect(box!.x + box!.width).toBeLessThanOrEqual(390);
      }
    }
    await page.context().close();
  });

  it("at 390×844 a tenant admin's and a platform admin's pages do not scroll sideways either", async () => {
    const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
    for (const [token, pages] of [
      [
        t.token('aurora-research', 'TENANT_ADMIN'),
        [
          ['/quota-requests', 'Quota requests'],
          ['/audit', 'Audit'],
          ['/', 'Budgets'],
        ],
      ],
      [
        t.token(null, 'PLATFORM_ADMIN'),
        [
          ['/cluster', 'Cluster'],
          ['/policies', 'Policies'],
          ['/break-glass', 'Break-glass'],
        ],
      ],
    ] as const) {
      const page = await web.open(token, '/', { context: phone });
      for (const [path, heading] of pages) {
        await page.goto(`${web.origin}${path}`);
        await page.getByRole('heading', { name: heading }).first().waitFor();
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        expect(width, `${path} is ${width}px wide`).toBeLessThanOrEqual(390);
      }
      await page.context().close();
    }
  });

  it('follows prefers-color-scheme: a dark background in dark, a light one in light, contrast passing in both', async () => {
    const luminance = async (page: Page) =>
      page.evaluate(() => {
        const [r, g, b] = getComputedStyle(document.body)
          .backgroundColor.match(/\d+(\.\d+)?/g)!
          .map(Number) as [number, number, number];
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
      });
    for (const colorScheme of ['dark', 'light'] as const) {
      const page = await signedIn({ viewport: { width: 1280, height: 800 }, colorScheme });
      const l = await luminance(page);
      if (colorScheme === 'dark') expect(l).toBeLessThan(0.25);
      else expect(l).toBeGreaterThan(0.75);
      for (const [path, heading] of MEMBER_PAGES) {
        await page.goto(`${web.origin}${path}`);
        await page.getByRole('heading', { name: heading }).first().waitFor();
        expect(await web.axe(page, ['color-contrast']), `${colorScheme} ${path}`).toEqual([]);
      }
      await page.context().close();
    }
  });

  it('by keyboard alone: sign in, move between pages, filter and sort the jobs, open a job and cancel it', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const submitted = await t.gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: { name: 'keyboard-job', podSets: [{ count: 40, gpusPerPod: 8 }], expectedDurationSeconds: 3600 },
    });
    expect(submitted.body.errors).toBeUndefined();
    const page = await signedIn({ viewport: { width: 1280, height: 800 } });
    // Focus is visible where it lands.
    await tabTo(page, (el) => el.tag === 'a' && el.text === 'Jobs');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe('none');
    await page.keyboard.press('Enter');
    const table = page.getByRole('table', { name: 'Jobs' });
    await table.waitFor();
    await table.getByRole('row').filter({ hasText: 'keyboard-job' }).waitFor();

    await tabTo(page, (el) => el.tag === 'input' && /pending/i.test(el.label));
    await page.keyboard.press('Space');
    await expect(page.getByRole('checkbox', { name: 'pending' }).isChecked()).resolves.toBe(true);
    await tabTo(page, (el) => el.tag === 'button' && el.text === 'Name');
    await page.keyboard.press('Enter');
    await expect(table.getByRole('columnheader', { name: 'Name' }).getAttribute('aria-sort')).resolves.toBe(
      'ascending',
    );

    await tabTo(page, (el) => el.tag === 'a' && el.text === 'keyboard-job');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'keyboard-job' }).waitFor();
    await tabTo(page, (el) => el.tag === 'button' && /^Cancel/.test(el.text));
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => {
        const r = await t.gql(member, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, {
          id: submitted.body.data!.submitJob.id,
        });
        return (r.body.data as { node: { state: string } }).node.state;
      })
      .toBe('CANCELLED');
    await page.getByText('CANCELLED').first().waitFor();
    await page.context().close();
  });
});
