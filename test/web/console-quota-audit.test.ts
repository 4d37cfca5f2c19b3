// The console's quota-requests and audit pages in a real browser (Debian's chromium through
// playwright-core) against a real gateway: a tenant admin files a request from a recommendation's
// prefill and sees it PENDING; a platform admin approves it from the approvals queue with a comment,
// the tenant's page shows it ACTIVE (approved and applied) without a reload and the queue's nominal
// changed in the API; members, viewers and auditors are offered no filing (and the API refuses a
// member anyway); the tenant admin's audit page lists the request's audit records; a member on /audit
// sees the API's refusal as a message; another tenant's requests never show, a hostile reason is
// text; axe-core finds no serious or critical violation on either page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';
import type { TestApp } from '../helpers/harness.js';

const QUEUES = `{ queues { id name tenant { slug } quotas { flavor resource nominal } } }`;
const REQUEST = `mutation($in: RequestQuotaChangeInput!) { requestQuotaChange(input: $in) { id status } }`;
const DAY = 86_400_000;

describe.skipIf(!chromiumAvailable)('the console’s quota requests and audit pages in Chromium', () => {
  let web: ConsoleBrowser;
  let t: TestApp;
  let requestId = '';
  const reason = 'console-quota: more H100 for the spring pre-training run';

  const nominalOf = async (slug: string, flavor: string) => {
    const res = await t.gql(t.token(null, 'PLATFORM_ADMIN'), QUEUES);
    const queue = (res.body.data!.queues as { tenant: { slug: string }; quotas: any[] }[]).find(
      (q) => q.tenant.slug === slug,
    )!;
    return queue.quotas.find((q) => q.flavor === flavor && q.resource === 'GPU')?.nominal as number;
  };

  beforeAll(async () => {
    web = await startConsole();
    t = web.t;
    // Two idle days of history: both demo queues under-use their nominal, so there is a recommendation.
    t.now.value += 2 * DAY;
  }, 120_000);
  afterAll(() => web?.close());

  it('a tenant admin files a request prefilled from a recommendation and sees it PENDING', async () => {
    const page = await web.open(t.token('aurora-research', 'TENANT_ADMIN'), '/quota-requests');
    await page.getByRole('heading', { name: 'Quota requests', level: 1 }).waitFor();
    const recs = page.getByRole('table', { name: 'Recommendations' });
    await recs.waitFor();
    await expect(recs.textContent()).resolves.toMatch(/mean use 0 GPUs/);
    await recs.getByRole('button', { name: 'Prefill request for aurora-training' }).click();
    // The suggestion (down to its peak, 0 devices) applied to the whole-GPU flavor; the evidence in the reason.
    const amount = page.getByRole('spinbutton', { name: /GPU nominal asked for/ });
    await expect(amount.inputValue()).resolves.toBe('0');
    await expect(page.getByRole('combobox', { name: 'Flavor' }).inputValue()).resolves.toBe('h100-80g');
    await expect(page.getByRole('textbox', { name: 'Reason' }).inputValue()).resolves.toContain('mean use');
    await amount.fill('20');
    await page.getByRole('textbox', { name: 'Reason' }).fill(reason);
    expect(await web.axe(page)).toEqual([]);
    await page.getByRole('button', { name: 'File request' }).click();
    const row = page
      .getByRole('table', { name: 'Quota requests' })
      .getByRole('row')
      .filter({ hasText: reason });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('PENDING');
    await page.getByRole('heading', { name: 'Request: aurora-training h100-80g to 20' }).waitFor();
    const listed = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `{ quotaRequests(status: PENDING) { edges { node { id justification } } } }`,
    );
    requestId = listed.body.data!.quotaRequests.edges.find(
      (e: { node: { justification: string } }) => e.node.justification === reason,
    ).node.id;
    await page.context().close();
  });

  it('a platform admin approves it with a comment; the tenant’s page shows it applied, live, and the quota changed', async () => {
    expect(requestId).not.toBe('');
    expect(await nominalOf('aurora-research', 'h100-80g')).toBe(16);
    const tenantPage = await web.open(t.token('aurora-research', 'TENANT_ADMIN'), '/quota-requests');
    const row = tenantPage
      .getByRole('table', { name: 'Quota requests' })
      .getByRole('row')
      .filter({ hasText: reason });
    await row.filter({ hasText: 'PENDING' }).waitFor();

    const admin = await web.open(t.token(null, 'PLATFORM_ADMIN'), '/quota-requests');
    const card = admin.getByRole('article').filter({ hasText: reason });
    await card.waitFor();
    // Its evidence: the reason, the queue's use now.
    await expect(card.textContent()).resolves.toMatch(/uses 0 of nominal 16/);
    expect(await web.axe(admin)).toEqual([]);
    await card.getByRole('textbox', { name: /Comment on/ }).fill('Granted for the spring run.');
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.waitFor({ state: 'detached' });
    const adminRow = admin
      .getByRole('table', { name: 'Quota requests' })
      .getByRole('row')
      .filter({ hasText: reason });
    await adminRow.filter({ hasText: 'ACTIVE' }).waitFor();

    // The tenant's page, not reloaded.
    await row.filter({ hasText: 'ACTIVE' }).waitFor({ timeout: 5000 });
    await row.getByRole('button', { name: /Follow/ }).click();
    const followed = tenantPage.getByRole('region', { name: 'Request: aurora-training h100-80g to 20' });
    await followed.waitFor();
    const text = (await followed.textContent()) ?? '';
    expect(text).toContain('approved by Platform Admin');
    expect(text).toContain('Granted for the spring run.');
    expect(text).toContain('applied, nominal 16 → 20');
    expect(await nominalOf('aurora-research', 'h100-80g')).toBe(20);
    // The form's figures followed the change (QUOTA_CHANGED).
    await tenantPage.getByRole('spinbutton', { name: 'GPU nominal asked for (now 20)' }).waitFor();
    expect(await web.axe(tenantPage)).toEqual([]);
    await admin.context().close();
    await tenantPage.context().close();
  });

  it('members, viewers and auditors are offered no filing; the API refuses a member all the same', async () => {
    for (const role of ['MEMBER', 'VIEWER', 'AUDITOR'] as const) {
      const page = await web.open(t.token('aurora-research', role), '/quota-requests');
      await page.getByRole('table', { name: 'Quota requests' }).waitFor();
      await expect(page.getByRole('button', { name: 'File request' }).count()).resolves.toBe(0);
      await expect(page.getByRole('button', { name: /Prefill request/ }).count()).resolves.toBe(0);
      if (role === 'AUDITOR') await page.getByRole('table', { name: 'Recommendations' }).waitFor();
      await page.context().close();
    }
    const queues = await t.gql(t.token('aurora-research', 'MEMBER'), QUEUES);
    const refused = await t.gql(t.token('aurora-research', 'MEMBER'), REQUEST, {
      in: { queueId: queues.body.data!.queues[0].id, flavor: 'h100-80g', nominal: 30, justification: 'x' },
    });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('the audit page lists the request’s audit records for a tenant admin, filtered by action', async () => {
    const page = await web.open(t.token('aurora-research', 'TENANT_ADMIN'), '/audit');
    await page.getByRole('heading', { name: 'Audit', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: 'Tenant audit events' });
    const rows = table.getByRole('row');
    const created = rows.filter({ hasText: 'quotaRequest.create' }).filter({ hasText: 'Ada Admin' });
    await created.waitFor();
    await expect(created.textContent()).resolves.toContain('SUCCESS');
    // Its target links to where the request is followed.
    await expect(created.getByRole('link', { name: /Quota request/ }).getAttribute('href')).resolves.toBe(
      `/quota-requests?request=${encodeURIComponent(requestId)}`,
    );
    await rows.filter({ hasText: 'quotaRequest.approve' }).first().waitFor();
    // The member's refused attempt is on record too.
    await expect(rows.filter({ hasText: 'Max Member' }).filter({ hasText: 'DENIED' }).count()).resolves.toBe(
      1,
    );
    await page.getByRole('searchbox', { name: 'Filter by action' }).fill('quotaRequest.create');
    await expect(rows.filter({ hasText: 'quotaRequest.approve' }).count()).resolves.toBe(0);
    const shown = await rows.allTextContents();
    expect(shown.length).toBeGreaterThan(2);
    for (const text of shown.slice(1)) expect(text).toContain('quotaRequest.create');
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('the audit log pages back with "Load more", shows new events live, and platform admins see the platform log', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const queues = await t.gql(member, QUEUES);
    const attempt = (n: number) =>
      t.gql(member, REQUEST, {
        in: { queueId: queues.body.data!.queues[0].id, flavor: 'h100-80g', nominal: n, justification: 'x' },
      });
    for (let i = 0; i < 55; i++) await attempt(100 + i);
    const tenantId = (await t.gql(member, `{ tenant(slug: "aurora-research") { id } }`)).body.data!.tenant.id;
    const all = await t.gql(
      t.token('aurora-research', 'AUDITOR'),
      `query($id: ID!) { auditEvents(tenantId: $id, first: 100) { edges { cursor } } }`,
      { id: tenantId },
    );
    const total = all.body.data!.auditEvents.edges.length as number;
    // One page of 50 and a second, shorter one.
    expect(total).toBeGreaterThan(55);
    expect(total).toBeLessThan(100);
    const page = await web.open(t.token('aurora-research', 'AUDITOR'), '/audit');
    const rows = page.getByRole('table', { name: 'Tenant audit events' }).getByRole('row');
    await rows.nth(50).waitFor();
    await expect(rows.count()).resolves.toBe(51);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(total + 1);
    // Live: a change made now shows up at the top without a reload (refused attempts are not streamed).
    const before = await rows.count();
    const filed = await t.gql(t.token('aurora-research', 'TENANT_ADMIN'), REQUEST, {
      in: { queueId: queues.body.data!.queues[0].id, flavor: 'h100-80g', nominal: 24, justification: 'live' },
    });
    expect(filed.body.errors).toBeUndefined();
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(before + 1);
    await expect(rows.nth(1).textContent()).resolves.toContain('quotaRequest.create');
    await page.context().close();

    const admin = await web.open(t.token(null, 'PLATFORM_ADMIN'), '/audit');
    const platform = admin.getByRole('table', { name: 'Platform audit events' });
    // The approval is older than the newest page of attempts.
    await platform.getByRole('row').nth(50).waitFor();
    await admin.getByRole('button', { name: 'Load more' }).click();
    await platform.getByRole('row').filter({ hasText: 'quotaRequest.approve' }).first().waitFor();
    await expect(admin.getByRole('table', { name: 'Tenant audit events' }).count()).resolves.toBe(0);
    expect(await web.axe(admin)).toEqual([]);
    await admin.context().close();
  });

  it('a member on /audit sees the API’s refusal as a message, not a crash', async () => {
    const errorsBefore = web.pageErrors.length;
    const page = await web.open(t.token('aurora-research', 'MEMBER'), '/audit');
    await page.getByRole('heading', { name: 'Audit', level: 1 }).waitFor();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toMatch(/\w/);
    await expect(alert.textContent()).resolves.not.toContain('[GraphQL]');
    await expect(page.getByRole('table', { name: 'Tenant audit events' }).count()).resolves.toBe(0);
    expect(web.pageErrors.length).toBe(errorsBefore);
    expect(await web.axe(page)).toEqual([]);
    await page.context().close();
  });

  it('another tenant’s requests never show; a hostile reason is text, never markup', async () => {
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    const hostile = '<img src=x onerror="window.__pwned=1"> borealis wants more';
    const queues = await t.gql(bea, QUEUES);
    const theirs = await t.gql(bea, REQUEST, {
      in: {
        queueId: queues.body.data!.queues[0].id,
        flavor: 'h100-80g',
        nominal: 24,
        justification: hostile,
      },
    });
    expect(theirs.body.errors).toBeUndefined();
    const id = theirs.body.data!.requestQuotaChange.id as string;

    const page = await web.open(t.token('aurora-research', 'TENANT_ADMIN'), '/quota-requests');
    await page
      .getByRole('table', { name: 'Quota requests' })
      .getByRole('row')
      .filter({ hasText: reason })
      .waitFor();
    expect(await page.content()).not.toContain('borealis wants more');
    await page.goto(`${web.origin}/quota-requests?request=${encodeURIComponent(id)}`);
    await page.getByRole('heading', { name: 'Request not found' }).waitFor();
    expect(await page.content()).not.toContain('borealis wants more');
    await page.context().close();

    // The platform admin's queue and the tenant's own page show it as text: no image, nothing ran.
    for (const token of [t.token(null, 'PLATFORM_ADMIN'), bea]) {
      const own = await web.open(token, `/quota-requests?request=${encodeURIComponent(id)}`);
      await own.getByRole('heading', { name: 'Request: borealis-serving h100-80g to 24' }).waitFor();
      await expect(own.getByText(hostile).count()).resolves.toBeGreaterThan(0);
      expect(await own.locator('main img').count()).toBe(0);
      expect(await own.evaluate('window.__pwned')).toBeUndefined();
      await own.context().close();
    }
    expect(web.pageErrors).toEqual([]);
  });
});
