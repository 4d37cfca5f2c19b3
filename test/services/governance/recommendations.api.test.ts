// Quota recommendations from usage history: seeded hourly usage (the ledger's rollup)
// makes aurora's queue a constant borrower and borealis's an under-user; the query names each with
// its figures, for platform admins (both) and each tenant's admins and auditors (their own only).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { peopleOf, type SeedInterval, seedUsage } from '../../helpers/usage-seed.js';

const QUERY = `query($days: Int) { quotaRecommendations(days: $days) { queue { name } kind suggestion currentNominalGpus suggestedNominalGpus evidence } }`;
const H = 3_600_000;
const h100 = (startMs: number, hours: number, units: number): SeedInterval => ({
  flavor: 'h100-80g',
  start: new Date(startMs).toISOString(),
  hours,
  gpuUnits: units,
  unitPrice: 2.49,
  utilization: 0.7,
});

describeEachDialect('quota recommendations', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ dialect, governance: { quotaRequestIntervalMs: 3_600_000 } });
    const aurora = await peopleOf(t, 'aurora-research');
    const borealis = await peopleOf(t, 'borealis-inference');
    // The window ends at the last whole hour before "now": 14 days are [from, end).
    const end = Math.floor(t.now.value / H) * H + H;
    const from = end - 14 * 24 * H;
    // Both queues have 16 H100 + 56 MIG slices (8 GPUs) of nominal: 24 GPUs.
    await seedUsage(t, [
      // 30 GPUs for 324 of the 336 hours (idle for 12 hours the day before the end): above nominal ~96 % of
      // the time.
      {
        people: aurora,
        user: 'max',
        name: 'long-pretrain',
        priorityClass: 'training',
        state: 'SUCCEEDED',
        finishedAt: new Date(end - 12 * H).toISOString(),
        intervals: [h100(from, 312, 30), h100(end - 24 * H, 12, 30)],
      },
      // 2 GPUs for 100 hours: well under a third of its nominal, peak 2.
      {
        people: borealis,
        user: 'bob',
        name: 'small-serving',
        priorityClass: 'inference-critical',
        state: 'SUCCEEDED',
        finishedAt: new Date(from + 100 * H).toISOString(),
        intervals: [h100(from, 100, 2)],
      },
      // Before the window: not counted.
      {
        people: borealis,
        user: 'bob',
        name: 'old-burst',
        priorityClass: 'training',
        state: 'SUCCEEDED',
        finishedAt: new Date(from - 38 * H).toISOString(),
        intervals: [h100(from - 48 * H, 10, 60)],
      },
    ]);
    t.now.value = end + 30 * 60_000;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('platform admins get both: the constant borrower (dedicated pool, nominal at its mean use) and the under-user (shared pool, nominal at its peak)', async () => {
    const data = await expectOk(t, t.token(null, 'PLATFORM_ADMIN'), QUERY, {});
    const recs = data.quotaRecommendations;
    expect(
      recs.map((r: any) => [
        r.queue.name,
        r.kind,
        r.suggestion,
        r.currentNominalGpus,
        r.suggestedNominalGpus,
      ]),
    ).toEqual([
      ['aurora-training', 'CONSTANT_BORROWER', 'DEDICATED_POOL', 24, Math.ceil((30 * 324) / 336)],
      ['borealis-serving', 'UNDER_USED', 'SHARED_POOL', 24, 2],
    ]);
    for (const r of recs) expect(r.evidence).toMatch(/\d/);
  });

  it("tenant admins and auditors see their own tenant's queues only", async () => {
    for (const token of [t.token('aurora-research', 'TENANT_ADMIN'), t.token('aurora-research', 'AUDITOR')]) {
      const recs = (await expectOk(t, token, QUERY, {})).quotaRecommendations;
      expect(recs.map((r: any) => r.queue.name)).toEqual(['aurora-training']);
    }
    const bea = await t.gql(t.token('borealis-inference', 'TENANT_ADMIN'), QUERY, {});
    expect(bea.body.errors).toBeUndefined();
    expect(bea.body.data!.quotaRecommendations.map((r: any) => r.queue.name)).toEqual(['borealis-serving']);
    expect(JSON.stringify(bea.body)).not.toMatch(/aurora/);
    for (const role of ['MEMBER', 'VIEWER'] as const)
      expect(codesOf(await t.gql(t.token('aurora-research', role), QUERY, {})), role).toEqual(['FORBIDDEN']);
    expect(codesOf(await t.gql(t.token('borealis-inference', 'MEMBER'), QUERY, {}))).toEqual(['FORBIDDEN']);
  });

  it('the window is the last `days` whole hours: in the last day aurora borrowed half the hours (no recommendation), and days is 1 to 90', async () => {
    const lastDay = (await expectOk(t, t.token(null, 'PLATFORM_ADMIN'), QUERY, { days: 1 }))
      .quotaRecommendations;
    expect(lastDay.map((r: any) => r.queue.name)).not.toContain('aurora-training');
    for (const days of [0, 91, -3])
      expect(codesOf(await t.gql(t.token(null, 'PLATFORM_ADMIN'), QUERY, { days })), String(days)).toEqual([
        'BAD_USER_INPUT',
      ]);
  });
});
