import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { enc, seedStandardUsage } from '../../helpers/usage-seed.js';

/**
 * The usage graph over seeded ledger and rollup rows (see usage-seed.ts for the figures):
 * grouping by each dimension and granularity, totals, who sees money, members' own jobs only,
 * the platform-wide view, the USAGE_READ scope, and another tenant's ids answering NOT_FOUND.
 */
const USAGE = `query($t: ID, $g: [UsageDimension!], $from: DateTime!, $to: DateTime!, $gr: UsageGranularity, $f: UsageFilter) {
  usage(tenantId: $t, groupBy: $g, from: $from, to: $to, granularity: $gr, filter: $f) {
    currency from to granularity
    rows { periodStart tenant { slug } project { slug } queue { name } user priorityClass flavor gpuHours cost efficiency jobs cpuHours memoryGibHours }
    total { periodStart gpuHours cost efficiency jobs cpuHours memoryGibHours }
  }
}`;
const RANGE = { from: '2026-09-01T00:00:00Z', to: '2026-12-01T00:00:00Z' };

describeEachDialect('usage graph', (dialect) => {
  let t: TestApp;
  let seed: Awaited<ReturnType<typeof seedStandardUsage>>;
  let aurora: string;
  let borealis: string;
  let admin: string;
  const run = (bearer: string, variables: Record<string, unknown>) =>
    expectOk(t, bearer, USAGE, { ...RANGE, ...variables }).then((d) => d.usage);

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    seed = await seedStandardUsage(t);
    aurora = enc('Tenant', seed.aurora.tenant.id);
    borealis = enc('Tenant', seed.borealis.tenant.id);
    admin = t.token('aurora-research', 'TENANT_ADMIN');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('totals and buckets by DAY, MONTH and HOUR (UTC), with efficiency over measured time only', async () => {
    const day = await run(admin, { t: aurora, gr: 'DAY' });
    expect(day.currency).toBe('USD');
    expect(day.rows.map((r: any) => r.periodStart)).toEqual([
      '2026-10-01T00:00:00.000Z',
      '2026-10-02T00:00:00.000Z',
      '2026-11-05T00:00:00.000Z',
    ]);
    expect(day.rows.map((r: any) => r.gpuHours)).toEqual([16, 1, 4].map((n) => expect.closeTo(n, 9)));
    expect(day.total.gpuHours).toBeCloseTo(21, 9);
    expect(day.total.cost).toBeCloseTo(16 * 2.49 + 7 * 0.45 + 4 * 2.49, 9);
    expect(day.total.jobs).toBe(3);
    expect(day.total.efficiency).toBeCloseTo((8 + 3.2) / 20, 9);
    expect(day.total.cpuHours).toBeCloseTo(64, 9);
    expect(day.total.memoryGibHours).toBeCloseTo(256, 9);
    expect(day.rows[1].efficiency).toBeNull(); // the MIG job had no utilization sample
    expect(day.total.periodStart).toBeNull();

    const month = await run(admin, { t: aurora, gr: 'MONTH' });
    expect(month.rows.map((r: any) => [r.periodStart, r.gpuHours])).toEqual([
      ['2026-10-01T00:00:00.000Z', expect.closeTo(17, 9)],
      ['2026-11-01T00:00:00.000Z', expect.closeTo(4, 9)],
    ]);
    expect(month.total.cost).toBeCloseTo(day.total.cost, 9);

    const hour = await expectOk(t, admin, USAGE, {
      t: aurora,
      gr: 'HOUR',
      from: '2026-10-01T09:30:00Z',
      to: '2026-10-02T00:10:00Z',
    }).then((d) => d.usage);
    // Rounded to whole hours: 09:00 up to 01:00 (exclusive), so the MIG hour at 00:00 is in.
    expect(hour.from).toBe('2026-10-01T09:00:00.000Z');
    expect(hour.to).toBe('2026-10-02T01:00:00.000Z');
    expect(hour.rows.map((r: any) => [r.periodStart, r.gpuHours])).toEqual([
      ['2026-10-01T10:00:00.000Z', expect.closeTo(8, 9)],
      ['2026-10-01T11:00:00.000Z', expect.closeTo(8, 9)],
      ['2026-10-02T00:00:00.000Z', expect.closeTo(1, 9)],
    ]);
  });

  it('groups by each dimension, and the rows add up to the total', async () => {
    const by = async (dim: string) =>
      await run(admin, {
        t: aurora,
        g: [dim],
        gr: 'MONTH',
        from: '2026-10-01T00:00:00Z',
        to: '2026-11-01T00:00:00Z',
      });
    const flavor = await by('FLAVOR');
    expect(flavor.rows.map((r: any) => [r.flavor, r.gpuHours])).toEqual([
      ['a100-1g.10gb', expect.closeTo(1, 9)],
      ['h100-80g', expect.closeTo(16, 9)],
    ]);
    const klass = await by('PRIORITY_CLASS');
    expect(klass.rows.map((r: any) => [r.priorityClass, r.cost])).toEqual([
      ['experiment', expect.closeTo(3.15, 9)],
      ['training', expect.closeTo(39.84, 9)],
    ]);
    const user = await by('USER');
    expect(user.rows.map((r: any) => r.user).sort()).toEqual(['Ada Admin', 'Max Member']);
    const project = await by('PROJECT');
    expect(project.rows.map((r: any) => r.project.slug)).toEqual(['llm-pretraining']);
    const queue = await by('QUEUE');
    expect(queue.rows.map((r: any) => r.queue.name)).toEqual(['aurora-training']);
    const tenant = await by('TENANT');
    expect(tenant.rows.map((r: any) => r.tenant.slug)).toEqual(['aurora-research']);
    for (const report of [flavor, klass, user, project, queue, tenant]) {
      expect(report.rows.reduce((s: number, r: any) => s + r.gpuHours, 0)).toBeCloseTo(
        report.total.gpuHours,
        9,
      );
      expect(report.rows.reduce((s: number, r: any) => s + r.cost, 0)).toBeCloseTo(report.total.cost, 9);
      expect(report.rows.reduce((s: number, r: any) => s + r.jobs, 0)).toBe(report.total.jobs);
    }
    const filtered = await run(admin, { t: aurora, f: { flavor: 'h100-80g', priorityClass: 'training' } });
    expect(filtered.total.gpuHours).toBeCloseTo(20, 9);
  });

  it('money for tenant admins and auditors; members see only their own jobs, viewers nothing of others, neither any cost', async () => {
    const auditor = await run(t.token('aurora-research', 'AUDITOR'), { t: aurora, g: ['USER'] });
    expect(auditor.total.cost).toBeCloseTo(52.95, 9);
    const member = await run(t.token('aurora-research', 'MEMBER'), { t: aurora, g: ['USER', 'FLAVOR'] });
    expect(member.rows.map((r: any) => [r.user, r.flavor, r.cost])).toEqual([
      ['Max Member', 'h100-80g', null],
    ]);
    expect(member.total).toMatchObject({ gpuHours: expect.closeTo(16, 9), cost: null, jobs: 1 });
    const viewer = await run(t.token('aurora-research', 'VIEWER'), { t: aurora });
    expect(viewer.rows).toEqual([]);
    expect(viewer.total).toMatchObject({ gpuHours: 0, cost: null });
    // A member filtering on someone else is refused rather than silently shown nothing.
    const other = await t.gql(t.token('aurora-research', 'MEMBER'), USAGE, {
      ...RANGE,
      t: aurora,
      f: { memberId: enc('Member', seed.aurora.members.ada!.id) },
    });
    expect(codesOf(other)).toEqual(['FORBIDDEN']);
  });

  it('Tenant.usage and Project.usage read the same numbers', async () => {
    const data = await expectOk(
      t,
      admin,
      `query($from: DateTime!, $to: DateTime!) {
      tenant(slug: "aurora-research") { usage(from: $from, to: $to, granularity: MONTH) { total { gpuHours cost } }
        projects { edges { node { slug usage(from: $from, to: $to) { total { gpuHours } } } } } } }`,
      RANGE,
    );
    expect(data.tenant.usage.total.gpuHours).toBeCloseTo(21, 9);
    const pretraining = data.tenant.projects.edges.find((e: any) => e.node.slug === 'llm-pretraining');
    expect(pretraining.node.usage.total.gpuHours).toBeCloseTo(21, 9);
  });

  it('platform-wide only for platform admins, across tenants', async () => {
    const platform = await run(t.token(null, 'PLATFORM_ADMIN'), { g: ['TENANT'], gr: 'MONTH' });
    const bySlug = Object.fromEntries(
      platform.rows
        .filter((r: any) => r.periodStart.startsWith('2026-10'))
        .map((r: any) => [r.tenant.slug, r.gpuHours]),
    );
    expect(bySlug).toEqual({
      'aurora-research': expect.closeTo(17, 9),
      'borealis-inference': expect.closeTo(2, 9),
    });
    expect(platform.total.cost).toBeCloseTo(52.95 + 4.98, 9);
    for (const bearer of [
      admin,
      t.token('aurora-research', 'AUDITOR'),
      t.token('aurora-research', 'MEMBER'),
    ]) {
      expect(codesOf(await t.gql(bearer, USAGE, { ...RANGE, g: ['TENANT'] }))).toEqual(['FORBIDDEN']);
    }
    expect(codesOf(await t.gql(null, USAGE, { ...RANGE, t: aurora }))).toEqual(['UNAUTHENTICATED']);
  });

  it('a token without USAGE_READ is refused, on the query and on Job usage fields', async () => {
    const session = await t.jwt('ada@aurora.example');
    const minted = await expectOk(
      t,
      session,
      `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
      { in: { tenantId: aurora, name: 'no-usage', scopes: ['TENANT_READ', 'JOBS_READ'] } },
    );
    const token = minted.createApiToken.secret;
    expect(codesOf(await t.gql(token, USAGE, { ...RANGE, t: aurora }))).toEqual(['FORBIDDEN']);
    const job = await expectOk(
      t,
      token,
      `query($id: ID!) { node(id: $id) { ... on Job { name gpuHours cost usageIntervals { flavor } } } }`,
      { id: enc('Job', seed.jobs.maxJob.id) },
    );
    expect(job.node).toEqual({ name: 'max-pretrain', gpuHours: null, cost: null, usageIntervals: null });
  });

  it("Job.gpuHours, cost and intervals: admins with money, the member on their own job without, nobody else's", async () => {
    const q = `query($id: ID!) { node(id: $id) { ... on Job { gpuHours cost efficiency usageIntervals { flavor startedAt endedAt gpuHours cost closedBy } } } }`;
    const maxJob = { id: enc('Job', seed.jobs.maxJob.id) };
    const asAdmin = (await expectOk(t, admin, q, maxJob)).node;
    expect(asAdmin).toMatchObject({
      gpuHours: expect.closeTo(16, 9),
      cost: expect.closeTo(39.84, 9),
      efficiency: expect.closeTo(0.5, 9),
    });
    expect(asAdmin.usageIntervals.map((i: any) => [i.startedAt, i.gpuHours, i.closedBy])).toEqual([
      ['2026-10-01T10:00:00.000Z', expect.closeTo(8, 9), 'succeeded'],
      ['2026-10-01T11:00:00.000Z', expect.closeTo(8, 9), 'succeeded'],
    ]);
    const asMember = (await expectOk(t, t.token('aurora-research', 'MEMBER'), q, maxJob)).node;
    expect(asMember).toMatchObject({ gpuHours: expect.closeTo(16, 9), cost: null });
    expect(asMember.usageIntervals.every((i: any) => i.cost === null)).toBe(true);
    const othersJob = (
      await expectOk(t, t.token('aurora-research', 'MEMBER'), q, { id: enc('Job', seed.jobs.adaFailed.id) })
    ).node;
    expect(othersJob).toEqual({ gpuHours: null, cost: null, efficiency: null, usageIntervals: null });
    const asPlatform = (await expectOk(t, t.token(null, 'PLATFORM_ADMIN'), q, maxJob)).node;
    expect(asPlatform.cost).toBeCloseTo(39.84, 9);
  });

  it("another tenant's ids answer exactly like unknown ones, and nothing of the other tenant shows", async () => {
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    const ghostTenant = enc('Tenant', '01900000-0000-7000-8000-000000000000');
    const foreign = await t.gql(bea, USAGE, { ...RANGE, t: aurora });
    const missing = await t.gql(bea, USAGE, { ...RANGE, t: ghostTenant });
    expect(codesOf(foreign)).toEqual(['NOT_FOUND']);
    expect(foreign.body).toEqual(missing.body);
    const ghostProject = enc('Project', '01900000-0000-7000-8000-000000000000');
    const foreignProject = await t.gql(bea, USAGE, {
      ...RANGE,
      t: borealis,
      f: { projectId: enc('Project', seed.aurora.project.id) },
    });
    const missingProject = await t.gql(bea, USAGE, { ...RANGE, t: borealis, f: { projectId: ghostProject } });
    expect(codesOf(foreignProject)).toEqual(['NOT_FOUND']);
    expect(foreignProject.body).toEqual(missingProject.body);
    const foreignMember = await t.gql(bea, USAGE, {
      ...RANGE,
      t: borealis,
      f: { memberId: enc('Member', seed.aurora.members.max!.id) },
    });
    expect(codesOf(foreignMember)).toEqual(['NOT_FOUND']);
    // Validation comes after the rights: an outsider with a bad range still learns only NOT_FOUND.
    expect(codesOf(await t.gql(bea, USAGE, { t: aurora, from: RANGE.to, to: RANGE.from }))).toEqual([
      'NOT_FOUND',
    ]);

    const own = await t.gql(bea, USAGE, {
      ...RANGE,
      t: borealis,
      g: ['TENANT', 'PROJECT', 'QUEUE', 'USER', 'PRIORITY_CLASS', 'FLAVOR'],
    });
    expect(own.body.errors).toBeUndefined();
    const text = JSON.stringify(own.body);
    for (const secret of [
      'aurora',
      'Aurora',
      'Max Member',
      'Ada Admin',
      'llm-pretraining',
      seed.aurora.tenant.id,
    ])
      expect(text).not.toContain(secret);
    expect(own.body.data!.usage.total.gpuHours).toBeCloseTo(2, 9);
  });

  it('refuses bad ranges with BAD_USER_INPUT', async () => {
    expect(codesOf(await t.gql(admin, USAGE, { t: aurora, from: RANGE.to, to: RANGE.from }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(codesOf(await t.gql(admin, USAGE, { t: aurora, gr: 'HOUR', ...RANGE }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(
      codesOf(
        await t.gql(admin, USAGE, {
          t: aurora,
          gr: 'DAY',
          from: '2025-01-01T00:00:00Z',
          to: '2026-12-01T00:00:00Z',
        }),
      ),
    ).toEqual(['BAD_USER_INPUT']);
  });

  it('previewJob estimates GPU-hours from the declared duration, and cost for those who see money', async () => {
    const preview = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible estimatedGpuHours estimatedCost } }`;
    const input = {
      in: {
        queueId: enc('Queue', seed.aurora.queue.id),
        name: 'estimate',
        priorityClass: 'training',
        podSets: [{ gpusPerPod: 2, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 5400,
      },
    };
    const asAdmin = (await expectOk(t, admin, preview, input)).previewJob;
    expect(asAdmin).toMatchObject({
      estimatedGpuHours: expect.closeTo(3, 9),
      estimatedCost: expect.closeTo(3 * 2.49, 9),
    });
    const asMember = (await expectOk(t, t.token('aurora-research', 'MEMBER'), preview, input)).previewJob;
    expect(asMember).toMatchObject({ estimatedGpuHours: expect.closeTo(3, 9), estimatedCost: null });
    const undeclared = (
      await expectOk(t, admin, preview, { in: { ...input.in, expectedDurationSeconds: undefined } })
    ).previewJob;
    expect(undeclared).toMatchObject({ estimatedGpuHours: null, estimatedCost: null });
  });
});
