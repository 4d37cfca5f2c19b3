// The web console in a real browser (Debian's chromium through playwright-core) against a real gateway
// on a real port: sign-in with a token; a job submitted through the API appears in "Jobs" within 2 s
// without a reload, and its state changes live; the preview's numbers before a submit; a viewer is not
// offered Submit; another tenant's job id shows "not found" and nothing of it; a job's name is shown as
// text, never markup; a revoked token is sent back to sign-in; no request leaves the gateway's origin;
// axe-core finds no serious or critical violation on any page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageHourly } from '../../src/persistence/metering/entities.js';
import { Project, Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';
import type { TestApp } from '../helpers/harness.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;

describe.skipIf(!chromiumAvailable)('the web console in Chromium', () => {
  let web: ConsoleBrowser;
  let t: TestApp;

  beforeAll(async () => {
    web = await startConsole();
    t = web.t;
  }, 120_000);
  afterAll(() => web?.close());

  it('signs in with a token and shows the navigation a member has', async () => {
    const page = await web.open(t.token('aurora-research', 'MEMBER'));
    for (const name of ['Overview', 'Jobs', 'Submit', 'Usage'])
      await expect(page.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
    await expect(page.getByRole('link', { name: 'Cluster' }).count()).resolves.toBe(0);
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('a job submitted through the API appears in Jobs within 2 s without a reload, and its state changes live', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    // Live from the moment its queue subscription is open on the server (a change committed before that is
    // in the page's first query, or missed: the test waits for the subscription, as a person never notices).
    const bus = t.app.events;
    const subscribe = bus.subscribe.bind(bus);
    let queueWatches = 0;
    bus.subscribe = ((topic: string, ...rest: unknown[]) => {
      if (topic === 'queue-updated') queueWatches++;
      return (subscribe as (...a: unknown[]) => unknown)(topic, ...rest);
    }) as typeof bus.subscribe;
    const page = await web.open(member, '/jobs');
    const table = page.getByRole('table', { name: 'Jobs' });
    await table.waitFor();
    for (let i = 0; queueWatches === 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 50));
    bus.subscribe = subscribe;
    expect(queueWatches).toBeGreaterThan(0);
    await expect(table.getByRole('columnheader', { name: 'State' }).count()).resolves.toBe(1);
    // Far more than the cohort holds: it waits, PENDING, until cancelled.
    const submitted = await t.gql(member, SUBMIT, {
      in: { name: 'console-live', podSets: [{ count: 40, gpusPerPod: 8 }], expectedDurationSeconds: 3600 },
    });
    expect(submitted.body.errors).toBeUndefined();
    const row = table.getByRole('row').filter({ hasText: 'console-live' });
    const shownAt = Date.now();
    await row.waitFor({ timeout: 2000 });
    expect(Date.now() - shownAt).toBeLessThan(2000);
    await expect(row.textContent()).resolves.toContain('PENDING');
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, {
      id: submitted.body.data!.submitJob.id,
    });
    await row.filter({ hasText: 'CANCELLED' }).waitFor({ timeout: 2000 });
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('previews before submitting: fits or waits, preemptions, estimated GPU-hours and cost', async () => {
    const page = await web.open(t.token('aurora-research', 'MEMBER'), '/submit');
    await page.getByRole('textbox', { name: 'Name' }).fill('console-preview');
    await page.getByRole('spinbutton', { name: 'GPUs per pod' }).fill('2');
    await page.getByRole('spinbutton', { name: 'Expected hours' }).fill('3');
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('region', { name: 'Preview' });
    await preview.waitFor();
    const text = (await preview.textContent()) ?? '';
    expect(text).toMatch(/Fits now|Waits/);
    expect(text).toMatch(/Would preempt \d+ job/);
    // 2 GPUs for 3 hours: 6 GPU-hours.
    expect(text).toContain('Estimated 6.00 GPU-hours');
    expect(await web.axe(page)).toEqual([]);
    await page.getByRole('button', { name: 'Submit', exact: true }).click();
    await page.getByRole('heading', { name: 'console-preview' }).waitFor();
    await page.context().close();
  });

  it('a viewer is not offered Submit', async () => {
    const page = await web.open(t.token('aurora-research', 'VIEWER'));
    await expect(page.getByRole('link', { name: 'Submit' }).count()).resolves.toBe(0);
    await page.context().close();
  });

  it('another tenant’s job id shows "not found" and nothing of it; a job’s name is text, never markup', async () => {
    const bob = t.token('borealis-inference', 'MEMBER');
    const hostile = '<img src=x onerror="window.__pwned=1">';
    const theirs = await t.gql(bob, SUBMIT, {
      in: { name: hostile, podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60 },
    });
    expect(theirs.body.errors).toBeUndefined();
    const id = theirs.body.data!.submitJob.id as string;
    const page = await web.open(t.token('aurora-research', 'MEMBER'), `/jobs/${encodeURIComponent(id)}`);
    await page.getByRole('heading', { name: 'Job not found' }).waitFor();
    expect(await page.content()).not.toContain('onerror');
    await page.context().close();
    // Its own tenant sees the name as text: no image element, nothing ran.
    const own = await web.open(bob, `/jobs/${encodeURIComponent(id)}`);
    await own.getByRole('heading', { name: hostile }).waitFor();
    expect(await own.locator('main img').count()).toBe(0);
    expect(await own.evaluate('window.__pwned')).toBeUndefined();
    expect(await web.axe(own)).toEqual([]);
    await own.context().close();
  });

  it('a revoked token is sent back to sign-in with a message', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const tenant = await t.gql(admin, `{ tenant(slug: "aurora-research") { id } }`);
    // Tokens are minted by a person's session, not by another token.
    const minted = await t.gql(
      await t.jwt('ada@aurora.example'),
      `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret token { id } } }`,
      {
        in: {
          tenantId: tenant.body.data!.tenant.id,
          name: 'console-revoked',
          scopes: ['JOBS_READ', 'TENANT_READ', 'USAGE_READ'],
        },
      },
    );
    expect(minted.body.errors).toBeUndefined();
    const page = await web.open(minted.body.data!.createApiToken.secret);
    await t.gql(admin, `mutation($id: ID!) { revokeApiToken(id: $id) { id } }`, {
      id: minted.body.data!.createApiToken.token.id,
    });
    // The overview may sign out first (a queue event makes it refetch, and the refetch is refused); if
    // not, the next page's query is. Either way the person ends on sign-in with the reason.
    const jobsLink = page.getByRole('link', { name: 'Jobs', exact: true });
    const signInButton = page.getByRole('button', { name: 'Sign in' });
    await jobsLink.or(signInButton).first().waitFor();
    if (await jobsLink.isVisible()) await jobsLink.click({ timeout: 2000 }).catch(() => undefined);
    await signInButton.waitFor({ timeout: 5000 });
    await expect(page.getByRole('status').first().textContent()).resolves.toMatch(/sign in again/i);
    await page.context().close();
  });

  it("usage by project, person and flavor as bars, largest cost first, with the API's numbers", async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const em = systemEntityManager(t.app.orm).fork();
    const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    const project = await em.findOneOrFail(Project, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
    // This month's (the page's, by the browser's clock): a large h100 share and a small MIG one.
    const now = new Date();
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const hour = Math.max(monthStart, Math.floor(now.getTime() / 3_600_000) * 3_600_000 - 3_600_000);
    for (const [flavor, gpuSeconds, cost] of [
      ['h100-80g', 36_000, 24.9],
      ['a100-1g.10gb', 7_200, 0.9],
    ] as const)
      em.create(UsageHourly, {
        hour: new Date(hour),
        tenant: tenant.id,
        projectId: project.id,
        queueId: 'console-usage-breakdown-queue-000000',
        userId: '',
        priorityClass: 'training',
        flavor,
        gpuSeconds,
        usedGpuSeconds: 0,
        measuredGpuSeconds: 0,
        cpuSeconds: 0,
        memoryGibSeconds: 0,
        cost,
        jobs: 1,
      });
    await em.flush();
    const api = await t.gql(
      admin,
      `query($from: DateTime!, $to: DateTime!) { tenant(slug: "aurora-research") { usage(from: $from, to: $to, granularity: MONTH, groupBy: [FLAVOR]) { rows { flavor gpuHours cost } } } }`,
      {
        from: new Date(monthStart).toISOString(),
        to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
    );
    const expected = (
      api.body.data!.tenant.usage.rows as { flavor: string; gpuHours: number; cost: number }[]
    )
      .sort((a, b) => b.cost - a.cost)
      .map((r) => [r.flavor, r.gpuHours.toFixed(r.gpuHours < 10 ? 2 : 1)]);
    expect(expected.map(([f]) => f).slice(0, 2)).toEqual(['h100-80g', 'a100-1g.10gb']);

    const page = await web.open(admin, '/usage');
    const byFlavor = page.getByRole('figure', { name: 'Usage by flavor' });
    await byFlavor.getByRole('img').first().waitFor();
    const labels = await byFlavor
      .getByRole('img')
      .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    expect(labels.map((l) => l!.match(/^(.*): ([\d.]+) GPU-hours, /)!.slice(1, 3))).toEqual(expected);
    for (const name of ['Usage by project', 'Usage by person'])
      await expect(page.getByRole('figure', { name }).getByRole('img').count()).resolves.toBeGreaterThan(0);
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('the usage page and the overview pass axe; no request left the origin; no script error or CSP violation', async () => {
    const page = await web.open(t.token('aurora-research', 'TENANT_ADMIN'), '/usage');
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(await web.axe(page)).toEqual([]);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Queues' }).waitFor();
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
    expect(web.foreign).toEqual([]);
    expect(web.pageErrors).toEqual([]);
  });
});
