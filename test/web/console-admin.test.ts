// The console's platform-admin pages in a real browser (Debian's chromium through playwright-core)
// against a real gateway: on Cluster a platform admin creates a flavor (it shows, and the API has it),
// changes its price, deletes it after confirming; adds a node to a new pool, is told by the API that a
// pool with nodes is not deleted, empties and deletes it; creates a cohort, gives it quota, deletes it.
// On Break-glass they open a grant and close it (the API shows it closed, both audited). Policies shows
// the library, the rules and the controller. A tenant member on each page gets the API's refusal as a
// message and no edit controls; axe-core finds no serious or critical violation on any of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';
import type { TestApp } from '../helpers/harness.js';

/** Buttons every signed-in page has, or that only copy what the view shows. */
const HARMLESS = new Set(['Sign out', 'Copy as GraphQL', 'Copy as CLI']);

describe.skipIf(!chromiumAvailable)('the console’s platform-admin pages in Chromium', () => {
  let web: ConsoleBrowser;
  let t: TestApp;
  let platform = '';

  const api = async (query: string, variables?: Record<string, unknown>) => {
    const res = await t.gql(platform, query, variables);
    expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
    return res.body.data as Record<string, any>;
  };
  const flavor = async (name: string) =>
    (await api(`{ flavors { name pricePerUnitHour } }`)).flavors.find((f: any) => f.name === name);

  beforeAll(async () => {
    web = await startConsole();
    t = web.t;
    platform = t.token(null, 'PLATFORM_ADMIN');
  }, 120_000);
  afterAll(async () => {
    await web?.close();
    expect(web?.pageErrors ?? []).toEqual([]);
  });

  it('a platform admin creates a flavor on Cluster, changes its price, and deletes it after confirming', async () => {
    const page = await web.open(platform, '/cluster');
    await page.getByRole('heading', { name: 'Cluster', level: 1 }).waitFor();
    // What it showed before: nodes by pool with free capacity, fragmentation, the quota tree.
    await page.getByRole('table', { name: 'Nodes of pool shared' }).waitFor();
    await page.getByRole('table', { name: 'Fragmentation of pool shared' }).waitFor();
    await page.getByRole('article', { name: 'Cohort research-pool' }).waitFor();
    await expect(page.getByRole('img', { name: /^h100-80g: .* used of 16 nominal/ }).count()).resolves.toBe(
      2,
    );

    const create = page.getByRole('form', { name: 'New flavor' });
    await create.getByRole('textbox', { name: 'Name' }).fill('console-flavor');
    await create.getByRole('spinbutton', { name: 'Price per unit-hour' }).fill('3.5');
    await create.getByRole('button', { name: 'Create flavor' }).click();
    const flavors = page.getByRole('table', { name: 'Flavors' });
    const row = flavors.getByRole('row').filter({ hasText: 'console-flavor' });
    await row.filter({ hasText: '$3.50' }).waitFor();
    expect(await flavor('console-flavor')).toEqual({ name: 'console-flavor', pricePerUnitHour: 3.5 });
    expect(await web.axe(page)).toEqual([]);

    await page.getByRole('button', { name: 'Edit flavor console-flavor' }).click();
    const edit = page.getByRole('form', { name: 'Edit flavor console-flavor' });
    await edit.getByRole('spinbutton', { name: 'Price per unit-hour' }).fill('4.25');
    await edit.getByRole('button', { name: 'Save flavor' }).click();
    await row.filter({ hasText: '$4.25' }).waitFor();
    expect((await flavor('console-flavor')).pricePerUnitHour).toBe(4.25);

    // Nothing goes on the first click; "Cancel" keeps it; the second question's "Yes" deletes it.
    await page.getByRole('button', { name: 'Delete flavor console-flavor' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await flavor('console-flavor')).toBeDefined();
    await page.getByRole('button', { name: 'Delete flavor console-flavor' }).click();
    const yes = page.getByRole('button', { name: 'Yes, delete flavor console-flavor' });
    await expect(yes.evaluate((b) => b === document.activeElement)).resolves.toBe(true);
    await page.keyboard.press('Enter');
    await row.waitFor({ state: 'detached' });
    expect(await flavor('console-flavor')).toBeUndefined();
    // A flavor in use is not deleted: the API's words are shown.
    await page.getByRole('button', { name: 'Delete flavor h100-80g' }).click();
    await page.getByRole('button', { name: 'Yes, delete flavor h100-80g' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/h100-80g/);
    expect(await flavor('h100-80g')).toBeDefined();
    await page.context().close();
  });

  it('a platform admin edits a node pool and a cohort on Cluster; refusals show the API’s message', async () => {
    const page = await web.open(platform, '/cluster');
    const newPool = page.getByRole('form', { name: 'New node pool' });
    await newPool.getByRole('textbox', { name: 'Name' }).fill('console-pool');
    await newPool.getByRole('button', { name: 'Create pool' }).click();
    const pool = page.getByRole('article', { name: 'Pool console-pool' });
    await pool.waitFor();
    await pool.getByRole('button', { name: 'Edit pool console-pool' }).click();
    const editor = pool.getByRole('form', { name: 'Edit pool console-pool' });
    await editor.getByRole('button', { name: 'Add node' }).click();
    await editor.getByRole('textbox', { name: 'Name of new node 1' }).fill('console-node-1');
    await editor.getByRole('combobox', { name: 'Flavor of new node 1' }).selectOption('h100-80g');
    await editor.getByRole('spinbutton', { name: 'GPUs of new node 1' }).fill('4');
    await editor.getByRole('button', { name: 'Save pool' }).click();
    await pool
      .getByRole('table', { name: 'Nodes of pool console-pool' })
      .getByText('console-node-1')
      .waitFor();
    const fragmentation = pool.getByRole('table', { name: 'Fragmentation of pool console-pool' });
    // Free capacity comes from the scheduler once it has the new node.
    await fragmentation.getByRole('row').filter({ hasText: '4 (1 node)' }).waitFor();
    const pools = async () => (await api(`{ nodePools { name nodes { name gpus } } }`)).nodePools;
    expect((await pools()).find((p: any) => p.name === 'console-pool').nodes).toEqual([
      { name: 'console-node-1', gpus: 4 },
    ]);

    await pool.getByRole('button', { name: 'Delete pool console-pool' }).click();
    await pool.getByRole('button', { name: 'Yes, delete pool console-pool' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/1 node\(s\): "console-node-1"/);
    await pool.getByRole('button', { name: 'Edit pool console-pool' }).click();
    await editor.getByRole('button', { name: 'Remove console-node-1' }).click();
    await editor.getByRole('button', { name: 'Save pool' }).click();
    await editor.waitFor({ state: 'detached' });
    await pool.getByRole('button', { name: 'Delete pool console-pool' }).click();
    await pool.getByRole('button', { name: 'Yes, delete pool console-pool' }).click();
    await pool.waitFor({ state: 'detached' });
    expect((await pools()).map((p: any) => p.name)).not.toContain('console-pool');

    const newCohort = page.getByRole('form', { name: 'New cohort' });
    await newCohort.getByRole('textbox', { name: 'Name' }).fill('console-cohort');
    await newCohort.getByRole('combobox', { name: 'Parent' }).selectOption({ label: 'research-pool' });
    await newCohort.getByRole('button', { name: 'Create cohort' }).click();
    const cohort = page
      .getByRole('article', { name: 'Cohort research-pool' })
      .getByRole('article', { name: 'Cohort console-cohort' });
    await cohort.waitFor();
    await cohort.getByRole('button', { name: 'Edit cohort console-cohort' }).click();
    const cohortForm = cohort.getByRole('form', { name: 'Edit cohort console-cohort' });
    await cohortForm.getByRole('button', { name: 'Add quota line' }).click();
    await cohortForm.getByRole('combobox', { name: 'Flavor of line 1' }).selectOption('h100-80g');
    await cohortForm.getByRole('spinbutton', { name: 'Nominal of line 1' }).fill('4');
    await cohortForm.getByRole('button', { name: 'Save cohort' }).click();
    await cohort.getByText('holds 4 h100-80g').waitFor();
    const cohorts = async () =>
      (await api(`{ cohorts { name parentName quotas { flavor resource nominal } } }`)).cohorts;
    expect((await cohorts()).find((c: any) => c.name === 'console-cohort')).toEqual({
      name: 'console-cohort',
      parentName: 'research-pool',
      quotas: [{ flavor: 'h100-80g', resource: 'GPU', nominal: 4 }],
    });
    expect(await web.axe(page)).toEqual([]);
    await cohort.getByRole('button', { name: 'Delete cohort console-cohort' }).click();
    await cohort.getByRole('button', { name: 'Yes, delete cohort console-cohort' }).click();
    await cohort.waitFor({ state: 'detached' });
    expect((await cohorts()).map((c: any) => c.name)).not.toContain('console-cohort');
    await page.context().close();
  });

  it('a platform admin opens a break-glass grant and closes it: the API shows it closed, both audited', async () => {
    const tenants = (await api(`{ tenants(first: 10) { edges { node { id slug } } } }`)).tenants.edges;
    const aurora = tenants.find((e: any) => e.node.slug === 'aurora-research').node.id as string;
    const page = await web.open(platform, '/break-glass');
    await page.getByRole('heading', { name: 'Break-glass', level: 1 }).waitFor();
    await page.getByRole('combobox', { name: 'Tenant' }).selectOption({ label: 'Aurora Research' });
    const form = page.getByRole('form', { name: 'Open a grant for Aurora Research' });
    const reason = 'console-admin: support ticket 4711, a stuck job';
    await form.getByRole('textbox', { name: /Reason/ }).fill(reason);
    await form.getByRole('spinbutton', { name: 'Duration (minutes)' }).fill('30');
    await form.getByRole('button', { name: 'Open grant' }).click();
    const table = page.getByRole('table', { name: 'Break-glass grants for Aurora Research' });
    const row = table.getByRole('row').filter({ hasText: reason });
    await row.filter({ hasText: 'open' }).waitFor();
    expect(await web.axe(page)).toEqual([]);
    await row.getByRole('button', { name: /^Close the grant opened/ }).click();
    await row.getByRole('button', { name: /^Yes, close the grant opened/ }).click();
    await row.filter({ hasText: 'closed' }).waitFor();
    const grants = (
      await api(
        `query($t: ID!) { breakGlassGrants(tenantId: $t) { reason active closedAt expiresAt createdAt } }`,
        {
          t: aurora,
        },
      )
    ).breakGlassGrants;
    const grant = grants.find((g: any) => g.reason === reason);
    expect(grant.active).toBe(false);
    expect(grant.closedAt).not.toBeNull();
    expect(Date.parse(grant.expiresAt) - Date.parse(grant.createdAt)).toBe(30 * 60_000);
    const audit = await t.gql(
      t.token('aurora-research', 'AUDITOR'),
      `query($t: ID!) { auditEvents(tenantId: $t, last: 50) { edges { node { action outcome } } } }`,
      { t: aurora },
    );
    const actions = audit.body.data!.auditEvents.edges.map((e: any) => `${e.node.action} ${e.node.outcome}`);
    expect(actions).toEqual(expect.arrayContaining(['breakglass.open SUCCESS', 'breakglass.close SUCCESS']));
    await page.context().close();
  });

  it('Policies shows the isolation policies, the rules and the controller; a platform admin sets its window', async () => {
    const page = await web.open(platform, '/policies');
    await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
    const policies = page.getByRole('table', { name: 'Isolation policies' });
    for (const name of ['dedicated', 'guaranteed', 'elastic', 'best-effort'])
      await policies.getByRole('row').filter({ hasText: name }).first().waitFor();
    await page.getByRole('table', { name: 'Isolation policy rules' }).waitFor();
    await page.getByRole('button', { name: 'Edit policy elastic' }).click();
    await page.getByRole('form', { name: 'Edit policy elastic' }).waitFor();
    const controller = page.getByRole('form', { name: 'Governance controller settings' });
    await controller.getByRole('spinbutton', { name: 'Window (s)' }).fill('120');
    await controller.getByRole('button', { name: 'Save controller' }).click();
    await controller.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await api(`{ governanceController { windowSeconds } }`)).governanceController.windowSeconds).toBe(
      120,
    );
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('a tenant member on Cluster, Policies and Break-glass gets the API’s refusal and no edit controls', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const refusal = async (query: string) => {
      const res = await t.gql(member, query);
      return (res.body.errors ?? []).map((e) => e.message);
    };
    const tenantId = (await t.idsOf('aurora-research')).Tenant!;
    const expected: Record<string, string[]> = {
      '/cluster': await refusal(`{ nodePools { id } cohorts { id } }`),
      '/policies': await refusal(`{ governanceController { enabled } }`),
      '/break-glass': await refusal(`{ breakGlassGrants(tenantId: "${tenantId}") { id } }`),
    };
    for (const [path, messages] of Object.entries(expected)) {
      expect(messages.length, path).toBeGreaterThan(0);
      const page = await web.open(member, path);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      expect(messages, path).toContain((await alert.textContent())?.trim());
      await expect(page.locator('form').count(), path).resolves.toBe(0);
      const buttons = await page.getByRole('button').allTextContents();
      expect(
        buttons.map((b) => b.trim()).filter((b) => !HARMLESS.has(b)),
        path,
      ).toEqual([]);
      expect(await web.axe(page), path).toEqual([]);
      await page.context().close();
    }
  });
});
