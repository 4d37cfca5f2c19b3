import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';

/**
 * updateFlavor and deleteFlavor: platform admins only, audited, checked before anything is
 * written; a flavor's kind and units change (and it is deleted) only while nothing uses it.
 * Flavor.pricePerUnitHour is the price book's version in effect.
 */
let t: TestApp;
let platform: string;
let ada: string;
let aurora: Record<string, string>;
let serial = 0;

const FLAVOR = 'id name kind gpuModel slicesPerGpu pricePerUnitHour priceEffectiveFrom';
const CREATE = `mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { ${FLAVOR} } }`;
const UPDATE = `mutation($in: UpdateFlavorInput!) { updateFlavor(input: $in) { ${FLAVOR} } }`;
const DELETE = `mutation($id: ID!) { deleteFlavor(id: $id) }`;
const FLAVORS = `{ flavors { ${FLAVOR} } priceBook { flavorPrices { flavor pricePerUnitHour } } }`;
const GHOST = Buffer.from('Flavor:01900000-0000-7000-8000-000000000000').toString('base64');

async function newFlavor(extra: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const name = `probe-${++serial}`;
  return (await expectOk(t, platform, CREATE, { in: { name, kind: 'GPU', pricePerUnitHour: 1, ...extra } }))
    .createFlavor;
}

async function flavorNamed(name: string): Promise<Record<string, any>> {
  return (await expectOk(t, platform, FLAVORS)).flavors.find((f: { name: string }) => f.name === name);
}

async function audits(action: string): Promise<{ outcome: string; targetId: string | null }[]> {
  const rows = await systemEntityManager(t.app.orm).find(AuditEvent, { action }, { orderBy: { id: 'asc' } });
  return rows.map((r) => ({ outcome: r.outcome, targetId: r.targetId ?? null }));
}

const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1];

describeEachDialect('updateFlavor and deleteFlavor', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a platform admin changes the label, the units of an unused flavor and its price; audited', async () => {
    const flavor = await newFlavor();
    const updated = (
      await expectOk(t, platform, UPDATE, {
        in: {
          id: flavor.id,
          gpuModel: 'NVIDIA L4',
          kind: 'TIMESLICE',
          slicesPerGpu: 4,
          pricePerUnitHour: 1.5,
        },
      })
    ).updateFlavor;
    expect(updated).toMatchObject({
      name: flavor.name,
      kind: 'TIMESLICE',
      gpuModel: 'NVIDIA L4',
      slicesPerGpu: 4,
      pricePerUnitHour: 1.5,
      priceEffectiveFrom: new Date(t.now.value).toISOString(),
    });
    expect(await audits('flavor.update')).toContainEqual({ outcome: 'SUCCESS', targetId: rawId(flavor.id) });
    // null clears the label; what is left out stays.
    const cleared = (await expectOk(t, platform, UPDATE, { in: { id: flavor.id, gpuModel: null } }))
      .updateFlavor;
    expect(cleared).toMatchObject({
      gpuModel: null,
      kind: 'TIMESLICE',
      slicesPerGpu: 4,
      pricePerUnitHour: 1.5,
    });
  });

  it('Flavor.pricePerUnitHour is the price book entry in effect, with its date, not the creation price', async () => {
    const flavor = await newFlavor({ pricePerUnitHour: 2 });
    expect(await flavorNamed(flavor.name)).toMatchObject({
      pricePerUnitHour: 2,
      priceEffectiveFrom: new Date(0).toISOString(),
    });
    const from = new Date(t.now.value + 3_600_000);
    await expectOk(
      t,
      platform,
      `mutation($in: SetFlavorPriceInput!) { setFlavorPrice(input: $in) { flavor } }`,
      { in: { flavor: flavor.name, pricePerUnitHour: 3, effectiveFrom: from.toISOString() } },
    );
    expect((await flavorNamed(flavor.name)).pricePerUnitHour).toBe(2); // scheduled, not yet in effect
    const saved = t.now.value;
    t.now.value = from.getTime() + 1;
    try {
      expect(await flavorNamed(flavor.name)).toMatchObject({
        pricePerUnitHour: 3,
        priceEffectiveFrom: from.toISOString(),
      });
    } finally {
      t.now.value = saved;
    }
  });

  it("the scheduler's preview follows a price change: the cost estimate of the same job changes", async () => {
    const preview = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible estimatedCost } }`;
    const job = {
      in: {
        queueId: aurora.Queue,
        name: 'price probe',
        podSets: [{ gpusPerPod: 2, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 3600,
      },
    };
    const before = (await expectOk(t, ada, preview, job)).previewJob;
    expect(before.estimatedCost).toBeCloseTo(2 * 2.49);
    const h100 = await flavorNamed('h100-80g');
    t.now.value += 1000; // a new version at a new instant
    await expectOk(t, platform, UPDATE, { in: { id: h100.id, pricePerUnitHour: 3 } });
    const after = (await expectOk(t, ada, preview, job)).previewJob;
    expect(after.estimatedCost).toBeCloseTo(2 * 3);
    expect((await flavorNamed('h100-80g')).pricePerUnitHour).toBe(3);
  });

  it('a tenant admin is FORBIDDEN and changes nothing', async () => {
    const flavor = await newFlavor();
    await expectRefusedUnchanged(t, ada, UPDATE, { in: { id: flavor.id, gpuModel: 'x' } }, 'FORBIDDEN');
    await expectRefusedUnchanged(t, ada, DELETE, { id: flavor.id }, 'FORBIDDEN');
    expect(await flavorNamed(flavor.name)).toMatchObject({ gpuModel: null });
  });

  it('bad input is BAD_USER_INPUT with nothing written', async () => {
    const flavor = await newFlavor();
    const before = await expectOk(t, platform, FLAVORS);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ pricePerUnitHour: -1 }, /must not be negative/],
      [{ pricePerUnitHour: 2, priceEffectiveFrom: new Date(t.now.value - 60_000).toISOString() }, /past/],
      [{ priceEffectiveFrom: new Date(t.now.value + 60_000).toISOString() }, /needs pricePerUnitHour/],
      [{ kind: 'MIG' }, /needs slicesPerGpu/],
      [{ slicesPerGpu: 0 }, /at least 1/],
      [{ gpuModel: 'x'.repeat(101) }, /100/],
    ];
    for (const [fields, message] of cases) {
      const res = await expectRefusedUnchanged(
        t,
        platform,
        UPDATE,
        { in: { id: flavor.id, ...fields } },
        'BAD_USER_INPUT',
      );
      expect(res.body.errors![0]!.message, JSON.stringify(fields)).toMatch(message);
    }
    expect(await expectOk(t, platform, FLAVORS)).toEqual(before);
    expect((await audits('flavor.update')).filter((a) => a.outcome === 'FAILED').length).toBeGreaterThan(0);
  });

  it('a flavor in use: its kind cannot change and it cannot be deleted (CONFLICT naming the users)', async () => {
    const h100 = await flavorNamed('h100-80g');
    const kind = await expectRefusedUnchanged(
      t,
      platform,
      UPDATE,
      { in: { id: h100.id, kind: 'TIMESLICE', slicesPerGpu: 2 } },
      'CONFLICT',
    );
    expect(kind.body.errors![0]!.message).toMatch(/node pool "shared"/);
    const del = await expectRefusedUnchanged(t, platform, DELETE, { id: h100.id }, 'CONFLICT');
    const message = del.body.errors![0]!.message;
    expect(message).toMatch(/6 node\(s\)|4 node\(s\)/);
    expect(message).toMatch(/queue "aurora-training", "borealis-serving"/);
    expect(await flavorNamed('h100-80g')).toMatchObject({ kind: 'GPU', slicesPerGpu: null });

    // Used by a cohort's quota only: named, and free once the quota is gone.
    const spare = await newFlavor();
    const cohort = (
      await expectOk(t, platform, `mutation($in: CreateCohortInput!) { createCohort(input: $in) { id } }`, {
        in: { name: `holds-${serial}`, quotas: [{ flavor: spare.name, nominal: 4 }] },
      })
    ).createCohort;
    const held = await expectRefusedUnchanged(t, platform, DELETE, { id: spare.id }, 'CONFLICT');
    expect(held.body.errors![0]!.message).toMatch(new RegExp(`cohort "holds-${serial}"`));
    await expectOk(t, platform, `mutation($in: UpdateCohortInput!) { updateCohort(input: $in) { id } }`, {
      in: { id: cohort.id, quotas: [] },
    });
    expect((await expectOk(t, platform, DELETE, { id: spare.id })).deleteFlavor).toBe(spare.id);
  });

  it('an unknown id is NOT_FOUND', async () => {
    await expectRefusedUnchanged(t, platform, UPDATE, { in: { id: GHOST, gpuModel: 'x' } }, 'NOT_FOUND');
    await expectRefusedUnchanged(t, platform, DELETE, { id: GHOST }, 'NOT_FOUND');
    expect(codesOf(await t.gql(platform, DELETE, { id: aurora.Queue }))).toEqual(['NOT_FOUND']);
  });

  it('an unused flavor is deleted with its prices, audited; its name can be used again', async () => {
    const flavor = await newFlavor({ pricePerUnitHour: 4 });
    expect((await expectOk(t, platform, DELETE, { id: flavor.id })).deleteFlavor).toBe(flavor.id);
    const after = await expectOk(t, platform, FLAVORS);
    expect(after.flavors.map((f: { name: string }) => f.name)).not.toContain(flavor.name);
    expect(after.priceBook.flavorPrices.map((p: { flavor: string }) => p.flavor)).not.toContain(flavor.name);
    expect(await audits('flavor.delete')).toContainEqual({ outcome: 'SUCCESS', targetId: rawId(flavor.id) });
    const again = (
      await expectOk(t, platform, CREATE, { in: { name: flavor.name, kind: 'GPU', pricePerUnitHour: 5 } })
    ).createFlavor;
    expect(again.pricePerUnitHour).toBe(5);
  });
});
