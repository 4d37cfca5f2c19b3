// The console's job page, overview and YAML submit in a real browser (Debian's chromium through
// playwright-core) against a real gateway: a job's probe samples drawn as a utilization chart whose
// accessible summary gives their mean and last values; a budget's burn-down with the spent and forecast
// figures the API reports; a budget alert arriving live in "Recent alerts"; examples/job.yaml (the CLI's
// job file) pasted into the YAML tab previews and submits a job with the file's fields; a YAML syntax
// error names its line and submits nothing; form and YAML tabs carry the job across; axe-core finds no
// serious or critical violation on any of these pages.
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JobProbeSample } from '../../src/persistence/governance/entities.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { UsageHourly } from '../../src/persistence/metering/entities.js';
import { Project, Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';
import type { TestApp } from '../helpers/harness.js';

const EXAMPLE_JOB = fs.readFileSync(path.join(import.meta.dirname, '../../examples/job.yaml'), 'utf8');

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const PROBES = `query($id: ID!) { node(id: $id) { ... on Job { state probes(last: 60) { gpuUtilization memoryUtilization } } } }`;
const BUDGETS = `query($slug: String!) { tenant(slug: $slug) { budgets { id scope spent forecast monthlyAmount currency alertsFired period } } }`;
const HOUR = 3_600_000;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':').slice(1).join(':');

describe.skipIf(!chromiumAvailable)(
  'the console: job utilization, budget burn-down, recent alerts, YAML submit',
  () => {
    let web: ConsoleBrowser;
    let t: TestApp;

    /** Money as the page formats it (the browser's locale). */
    const money = (page: Page, n: number, currency: string) =>
      page.evaluate(
        ([value, c]) => new Intl.NumberFormat(undefined, { style: 'currency', currency: c }).format(value),
        [n, currency] as [number, string],
      );
    const alertsText = (page: Page) => page.getByRole('region', { name: 'Recent alerts' }).textContent();
    const jobCount = async () => (await t.rowCounts({ ignoreAudit: true })).Job!;

    beforeAll(async () => {
      web = await startConsole();
      t = web.t;
    }, 120_000);
    afterAll(() => web?.close());

    it("the job page draws its probe samples, with their mean and last in the chart's accessible summary", async () => {
      const member = t.token('aurora-research', 'MEMBER');
      const submitted = await t.gql(member, SUBMIT, {
        in: { name: 'console-probed', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 1e6 },
      });
      expect(submitted.body.errors).toBeUndefined();
      const id = submitted.body.data!.submitJob.id as string;
      const quiet = await t.gql(member, SUBMIT, {
        in: {
          name: 'console-unprobed',
          podSets: [{ count: 40, gpusPerPod: 8 }],
          expectedDurationSeconds: 60,
        },
      });
      // Samples as the leader's probe writer stores them, one a minute.
      const em = systemEntityManager(t.app.orm);
      const job = await em.findOneOrFail(Job, { id: rawId(id) });
      const start = t.now.value - 4 * 60_000;
      for (const [i, [gpu, memory]] of [
        [0.2, 0.3],
        [0.4, 0.5],
        [0.9, 0.4],
      ].entries())
        em.create(JobProbeSample, {
          job: job.id,
          tenant: job.tenant.id,
          at: start + i * 60_000,
          gpuUtilization: gpu!,
          memoryUtilization: memory!,
        });
      await em.flush();
      const samples = (await t.gql(member, PROBES, { id })).body.data!.node.probes as {
        gpuUtilization: number;
        memoryUtilization: number;
      }[];
      expect(samples).toHaveLength(3);
      const pct = (n: number) => `${Math.round(n * 100)}%`;
      const mean = pct(samples.reduce((a, s) => a + s.gpuUtilization, 0) / samples.length);
      const last = pct(samples.at(-1)!.gpuUtilization);

      const page = await web.open(member, `/jobs/${encodeURIComponent(id)}`);
      await page.getByRole('heading', { name: 'console-probed' }).waitFor();
      const chart = page.getByRole('figure', { name: /GPU utilization/ });
      await chart.waitFor();
      const summary = (await chart.getAttribute('aria-labelledby'))!;
      const caption = await page.locator(`[id="${summary}"]`).textContent();
      expect(caption).toContain(`mean ${mean}, last ${last} over the last 3 samples`);
      expect(caption).toContain('GPU memory mean 40%, last 40%');
      // uPlot drew it (a canvas inside the figure), and what the page showed before is still there.
      await chart.locator('canvas').first().waitFor();
      for (const heading of ['Timeline', 'Log'])
        await expect(page.getByRole('heading', { name: heading }).count()).resolves.toBe(1);
      expect(await web.axe(page)).toEqual([]);
      await page.context().close();

      const none = await web.open(member, `/jobs/${encodeURIComponent(quiet.body.data!.submitJob.id)}`);
      await none.getByText('No probe samples yet.').waitFor();
      expect(await web.axe(none)).toEqual([]);
      await none.context().close();
      await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
      await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, {
        id: quiet.body.data!.submitJob.id,
      });
    });

    it("the overview shows a budget's burn-down with the API's spent and forecast, and its alert arrives live", async () => {
      const admin = t.token('aurora-research', 'TENANT_ADMIN');
      const em = systemEntityManager(t.app.orm);
      const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
      const project = await em.findOneOrFail(Project, { tenant: tenant.id });
      const tenantId = Buffer.from(`Tenant:${tenant.id}`).toString('base64');
      const set = await t.gql(
        admin,
        `mutation($in: SetBudgetInput!) { setBudget(input: $in) { id spent } }`,
        { in: { tenantId, monthlyAmount: 1000, thresholds: [50, 80, 100] } },
      );
      expect(set.body.errors, JSON.stringify(set.body.errors)).toBeUndefined();
      expect(set.body.data!.setBudget.spent).toBe(0);

      let listening: () => void = () => undefined;
      const subscribed = new Promise<void>((resolve) => (listening = resolve));
      const page = await web.open(admin, '/', {
        beforeGoto: (p) =>
          p.on('websocket', (ws) =>
            ws.on('framesent', (f) => String(f.payload).includes('ConsoleTenantEvents') && listening()),
          ),
      });
      await page.getByRole('heading', { name: 'Recent alerts' }).waitFor();
      await page.getByRole('article', { name: 'Tenant budget' }).waitFor();
      await expect(alertsText(page)).resolves.toMatch(/No alerts/);
      // The live view is listening (its tenantEvents subscription went out) before anything is spent.
      await subscribed;
      await page.waitForTimeout(300);

      // 600 spent this month, in hourly rollup rows as the ledger writer leaves them: 60 %, the 50 % alert.
      const monthStart = Date.UTC(
        new Date(t.now.value).getUTCFullYear(),
        new Date(t.now.value).getUTCMonth(),
        1,
      );
      const hourNow = Math.floor(t.now.value / HOUR) * HOUR;
      for (const [i, [ago, cost]] of [
        [3 * 24 * HOUR, 200],
        [24 * HOUR, 150],
        [0, 250],
      ].entries())
        em.create(UsageHourly, {
          hour: new Date(Math.max(monthStart, hourNow - ago!)),
          tenant: tenant.id,
          projectId: project.id,
          queueId: `console-q${i}`,
          userId: '',
          priorityClass: 'training',
          flavor: 'h100-80g',
          gpuSeconds: 3600,
          usedGpuSeconds: 0,
          measuredGpuSeconds: 0,
          cpuSeconds: 0,
          memoryGibSeconds: 0,
          cost: cost!,
          jobs: 0,
        });
      await em.flush();
      // The checkpoint writes the alert's outbox row and sends it at once (no scheduling pass needed).
      await t.app.scheduler.checkpointUsage();

      const alerts = page.getByRole('region', { name: 'Recent alerts' });
      await alerts.getByText(/Tenant budget passed 50%/).waitFor();
      const budget = (await t.gql(admin, BUDGETS, { slug: 'aurora-research' })).body.data!.tenant.budgets[0];
      expect(budget).toMatchObject({ spent: 600, monthlyAmount: 1000, alertsFired: [50] });
      expect(budget.forecast).toBeGreaterThanOrEqual(600);
      const spent = await money(page, budget.spent, budget.currency);
      const amount = await money(page, budget.monthlyAmount, budget.currency);
      const forecast = await money(page, budget.forecast, budget.currency);
      const chart = page.getByRole('figure', { name: /Tenant budget burn-down/ });
      await expect
        .poll(async () => chart.textContent(), { timeout: 5000 })
        .toContain(`spent ${spent} of ${amount} (60%) so far; forecast ${forecast} by month end`);
      await chart.locator('canvas').first().waitFor();
      // The queue bars and my jobs are still there.
      await page.getByRole('heading', { name: 'Queues' }).waitFor();
      await page.getByRole('heading', { name: 'My running and pending jobs' }).waitFor();
      expect(await web.axe(page)).toEqual([]);
      await page.context().close();
    });

    it('a job pasted as YAML in the CLI’s job-file format previews and submits with the file’s fields', async () => {
      const member = t.token('aurora-research', 'MEMBER');
      const page = await web.open(member, '/submit');
      await page.getByRole('tab', { name: 'YAML' }).click();
      const editor = page.getByRole('textbox', { name: 'Job (YAML)' });
      await editor.waitFor();
      await editor.fill(EXAMPLE_JOB);
      await page.getByRole('button', { name: 'Preview' }).click();
      const preview = page.getByRole('region', { name: 'Preview' });
      await preview.waitFor();
      const text = (await preview.textContent()) ?? '';
      expect(text).toMatch(/Fits now|Waits/);
      // 2 GPUs for 600 s: 0.33 GPU-hours.
      expect(text).toContain('Estimated 0.33 GPU-hours');
      expect(await web.axe(page)).toEqual([]);
      const before = await jobCount();
      await page.getByRole('button', { name: 'Submit', exact: true }).click();
      await page.getByRole('heading', { name: 'llama-ft-demo' }).waitFor();
      expect(await jobCount()).toBe(before + 1);
      const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
      const stored = (
        await t.gql(
          member,
          `query($id: ID!) { node(id: $id) { ... on Job { name priorityClass expectedDurationSeconds queue { name } project { slug }
          checkpoint { intervalSeconds resumable }
          podSets { name count gpusPerPod cpuMillisPerPod memoryMiBPerPod flavors }
          container { image command env { name } datasets { location mountPath } artifactStore } } } }`,
          { id },
        )
      ).body.data!.node;
      const file = parse(EXAMPLE_JOB);
      expect(stored).toMatchObject({
        name: file.name,
        priorityClass: file.priorityClass,
        expectedDurationSeconds: file.expectedDurationSeconds,
        queue: { name: file.queue },
        project: { slug: file.project },
        checkpoint: file.checkpoint,
        podSets: file.podSets,
        container: {
          image: file.container.image,
          command: file.container.command,
          env: Object.keys(file.container.env).map((name) => ({ name })),
          datasets: file.container.datasets,
          artifactStore: file.container.artifactStore,
        },
      });
      await page.context().close();
      await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
    });

    it('a YAML syntax error shows its line and submits nothing; the form and YAML tabs carry the job across', async () => {
      const member = t.token('aurora-research', 'MEMBER');
      const page = await web.open(member, '/submit');
      await page.getByRole('textbox', { name: 'Name' }).fill('carried-across');
      await page.getByRole('spinbutton', { name: 'GPUs per pod' }).fill('2');
      await page.getByRole('tab', { name: 'YAML' }).click();
      const editor = page.getByRole('textbox', { name: 'Job (YAML)' });
      await editor.waitFor();
      // The form's job, as a job file the CLI reads.
      const written = parse(await editor.inputValue());
      expect(written).toMatchObject({
        name: 'carried-across',
        queue: expect.any(String),
        podSets: [{ count: 1, gpusPerPod: 2 }],
        container: { image: expect.any(String) },
      });
      // Back to the form with a changed name: the form shows it.
      await editor.fill((await editor.inputValue()).replace('carried-across', 'carried-back'));
      await page.getByRole('tab', { name: 'Form' }).click();
      await expect(page.getByRole('textbox', { name: 'Name' }).inputValue()).resolves.toBe('carried-back');

      await page.getByRole('tab', { name: 'YAML' }).click();
      const before = await jobCount();
      // The CLI's own broken-YAML case (test/cli/tenant.test.ts): line 4.
      await editor.fill('name: x\npodSets:\n  - gpusPerPod: 1\n   count: [\n');
      await page.getByRole('button', { name: 'Preview' }).click();
      const problem = page.getByRole('alert').filter({ hasText: 'The YAML does not parse' });
      await problem.waitFor();
      expect(await problem.textContent()).toMatch(/Line 4, column \d+: Sequence item without - indicator/);
      await expect(page.getByRole('region', { name: 'Preview' }).count()).resolves.toBe(0);
      await expect(page.getByRole('button', { name: 'Submit', exact: true }).count()).resolves.toBe(0);
      expect(await web.axe(page)).toEqual([]);
      // A shape error names its field and line the same way.
      await editor.fill('name: x\npodSets:\n  - gpusPerPod: 1\ngpus: 4\n');
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.getByRole('alert').filter({ hasText: 'Line 4: gpus: unknown field' }).waitFor();
      expect(await jobCount()).toBe(before);
      await page.context().close();
      expect(web.foreign).toEqual([]);
      expect(web.pageErrors).toEqual([]);
    });
  },
);
