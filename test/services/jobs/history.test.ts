import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { enc, seedStandardUsage, seedUsage } from '../../helpers/usage-seed.js';

/**
 * sacct-style history: finished jobs newest finished first, keyset-paged, filtered, each with
 * its intervals, GPU-hours, cost (money rule) and end reason; tenant-scoped like everything else.
 */
let t: TestApp;
let seed: Awaited<ReturnType<typeof seedStandardUsage>>;
let aurora: string;
const HISTORY = `query($t: ID!, $f: JobHistoryFilter, $first: Int, $after: String, $last: Int, $before: String) {
  jobHistory(tenantId: $t, filter: $f, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { name state finishedAt exitReason gpuHours cost usageIntervals { flavor gpuHours cost closedBy } } }
    pageInfo { hasNextPage hasPreviousPage endCursor startCursor }
  }
}`;
const names = (data: any) => data.jobHistory.edges.map((e: any) => e.node.name);

beforeAll(async () => {
  t = await startTestApp();
  seed = await seedStandardUsage(t);
  aurora = enc('Tenant', seed.aurora.tenant.id);
  // Two jobs finished at the same instant: the id breaks the tie, and paging neither skips nor repeats one.
  const tie = '2026-10-03T00:00:00Z';
  const h100 = { flavor: 'h100-80g', hours: 1, gpuUnits: 1, unitPrice: 2.49, utilization: null };
  await seedUsage(t, [
    {
      people: seed.aurora,
      user: 'max',
      name: 'tie-a',
      priorityClass: 'training',
      state: 'SUCCEEDED',
      finishedAt: tie,
      exitReason: 'completed',
      intervals: [{ ...h100, start: '2026-10-02T23:00:00Z' }],
    },
    {
      people: seed.aurora,
      user: 'max',
      name: 'tie-b',
      priorityClass: 'training',
      state: 'SUCCEEDED',
      finishedAt: tie,
      exitReason: 'completed',
      intervals: [{ ...h100, start: '2026-10-02T23:00:00Z' }],
    },
  ]);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('job history', () => {
  it('newest finished first, with intervals, GPU-hours, cost and exit reason', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const data = await expectOk(t, admin, HISTORY, { t: aurora, first: 10 });
    expect(names(data)).toEqual(['ada-eval', 'tie-b', 'tie-a', 'ada-mig-sweep', 'max-pretrain']);
    const failed = data.jobHistory.edges[0].node;
    expect(failed).toMatchObject({
      state: 'FAILED',
      exitReason: 'exit code 1',
      finishedAt: '2026-11-05T06:00:00.000Z',
      gpuHours: expect.closeTo(4, 9),
      cost: expect.closeTo(9.96, 9),
    });
    expect(failed.usageIntervals).toEqual([
      {
        flavor: 'h100-80g',
        gpuHours: expect.closeTo(4, 9),
        cost: expect.closeTo(9.96, 9),
        closedBy: 'failed',
      },
    ]);
  });

  it('pages forwards and backwards on (finishedAt, id) without skipping or repeating', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await expectOk(t, admin, HISTORY, { t: aurora, first: 2, after });
      seen.push(...names(page));
      if (!page.jobHistory.pageInfo.hasNextPage) break;
      after = page.jobHistory.pageInfo.endCursor;
    }
    expect(seen).toEqual(['ada-eval', 'tie-b', 'tie-a', 'ada-mig-sweep', 'max-pretrain']);
    const last = await expectOk(t, admin, HISTORY, { t: aurora, last: 2 });
    expect(names(last)).toEqual(['ada-mig-sweep', 'max-pretrain']);
    const before = await expectOk(t, admin, HISTORY, {
      t: aurora,
      last: 2,
      before: last.jobHistory.pageInfo.startCursor,
    });
    expect(names(before)).toEqual(['tie-b', 'tie-a']);
    expect(codesOf(await t.gql(admin, HISTORY, { t: aurora, first: 2, after: 'bm90LWEtY3Vyc29y' }))).toEqual([
      'BAD_USER_INPUT',
    ]);
  });

  it('filters by state, finish time, person, project, queue and priority class; only terminal states', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const by = async (f: Record<string, unknown>) =>
      names(await expectOk(t, admin, HISTORY, { t: aurora, f, first: 20 }));
    expect(await by({ states: ['FAILED', 'CANCELLED'] })).toEqual(['ada-eval', 'ada-mig-sweep']);
    expect(
      await by({ finishedAfter: '2026-10-02T00:00:00Z', finishedBefore: '2026-11-01T00:00:00Z' }),
    ).toEqual(['tie-b', 'tie-a', 'ada-mig-sweep']);
    expect(await by({ memberId: enc('Member', seed.aurora.members.ada!.id) })).toEqual([
      'ada-eval',
      'ada-mig-sweep',
    ]);
    expect(await by({ priorityClass: 'experiment' })).toEqual(['ada-mig-sweep']);
    expect(
      (
        await by({
          projectId: enc('Project', seed.aurora.project.id),
          queueId: enc('Queue', seed.aurora.queue.id),
        })
      ).length,
    ).toBe(5);
    expect(codesOf(await t.gql(admin, HISTORY, { t: aurora, f: { states: ['RUNNING'] } }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(
      codesOf(
        await t.gql(admin, HISTORY, {
          t: aurora,
          f: { finishedAfter: '2026-11-01T00:00:00Z', finishedBefore: '2026-10-01T00:00:00Z' },
        }),
      ),
    ).toEqual(['BAD_USER_INPUT']);
  });

  it('members read the history; usage of their own jobs only and never cost', async () => {
    const data = await expectOk(t, t.token('aurora-research', 'MEMBER'), HISTORY, { t: aurora, first: 10 });
    const byName = Object.fromEntries(data.jobHistory.edges.map((e: any) => [e.node.name, e.node]));
    expect(byName['max-pretrain']).toMatchObject({ gpuHours: expect.closeTo(16, 9), cost: null });
    expect(byName['max-pretrain'].usageIntervals.every((i: any) => i.cost === null)).toBe(true);
    expect(byName['ada-eval']).toMatchObject({ gpuHours: null, cost: null, usageIntervals: null });
    const auditor = await expectOk(t, t.token('aurora-research', 'AUDITOR'), HISTORY, {
      t: aurora,
      first: 1,
    });
    expect(auditor.jobHistory.edges[0].node.cost).toBeCloseTo(9.96, 9);
  });

  it("another tenant's tenant, project or member ids answer like unknown ones", async () => {
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    const borealis = enc('Tenant', seed.borealis.tenant.id);
    const ghost = (type: string) => enc(type, '01900000-0000-7000-8000-000000000000');
    const pairs: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ t: aurora }, { t: ghost('Tenant') }],
      [
        { t: borealis, f: { projectId: enc('Project', seed.aurora.project.id) } },
        { t: borealis, f: { projectId: ghost('Project') } },
      ],
      [
        { t: borealis, f: { queueId: enc('Queue', seed.aurora.queue.id) } },
        { t: borealis, f: { queueId: ghost('Queue') } },
      ],
      [
        { t: borealis, f: { memberId: enc('Member', seed.aurora.members.max!.id) } },
        { t: borealis, f: { memberId: ghost('Member') } },
      ],
    ];
    for (const [foreign, missing] of pairs) {
      const a = await t.gql(bea, HISTORY, { ...foreign, first: 5 });
      const b = await t.gql(bea, HISTORY, { ...missing, first: 5 });
      expect(codesOf(a)).toEqual(['NOT_FOUND']);
      expect(a.body).toEqual(b.body);
    }
    const own = await expectOk(t, bea, HISTORY, { t: borealis, first: 10 });
    expect(names(own)).toEqual(['bob-serving']);
    expect(JSON.stringify(own)).not.toMatch(/aurora|max-pretrain|ada-/);
  });
});
