import { wrap } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Flavor, PriorityClassRow, Queue } from '../../src/persistence/cluster/entities.js';
import { FlavorPrice, PriceMultiplier } from '../../src/persistence/metering/entities.js';
import { loadMeteringTables } from '../../src/persistence/metering/price-book.js';
import { findPlain } from '../../src/persistence/plain-rows.js';
import { Project, Tenant } from '../../src/persistence/tenancy/entities.js';
import { scopedEntityManager, TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../helpers/database.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/** An entity or a plain row as data: relations by id, dates as ISO text, as JSON carries them. */
function asData(value: object, entity: boolean): unknown {
  const data: Record<string, unknown> = entity ? { ...wrap(value).toObject() } : { ...value };
  for (const [key, v] of Object.entries(value as Record<string, unknown>))
    if (v && typeof v === 'object' && 'id' in v && !(v instanceof Date)) data[key] = (v as { id: string }).id;
  return JSON.parse(JSON.stringify(data));
}

describeEachDialect('findPlain reads what em.find reads', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ dialect });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('the same fields and values for tenants, projects, queues and priority classes, every row', async () => {
    const em = scopedEntityManager(t.app.orm, { all: true });
    for (const entity of [Tenant, Project, Queue, PriorityClassRow] as const) {
      const found = await em
        .fork({ clear: true })
        .find(entity as never, {}, { orderBy: { id: 'asc' } as never });
      const plain = await findPlain(em.fork({ clear: true }), entity as never, {}, { orderBy: 'id' });
      expect(found.length).toBeGreaterThan(0);
      expect(plain.map((row) => asData(row as object, false))).toEqual(
        found.map((row) => asData(row as object, true)),
      );
    }
  });

  it('loadMeteringTables reads the price book and flavors in one statement, as the entities hold them', async () => {
    const em = scopedEntityManager(t.app.orm, { all: true }).fork({ clear: true });
    const at = new Date(Date.UTC(2026, 10, 1));
    em.create(FlavorPrice, { flavor: 'h100-80g', pricePerUnitHour: 3.25, effectiveFrom: at });
    em.create(PriceMultiplier, { priorityClass: 'production', multiplier: 1.5, effectiveFrom: at });
    await em.flush();
    const tables = await loadMeteringTables(em.fork({ clear: true }));
    const flavors = await em.fork({ clear: true }).find(Flavor, {});
    expect(flavors.length).toBeGreaterThan(1);
    for (const f of flavors)
      expect(tables.flavors.get(f.name)).toEqual({ kind: f.kind, slicesPerGpu: f.slicesPerGpu ?? null });
    expect(tables.flavors.size).toBe(flavors.length);
    const later = at.getTime() + 3_600_000;
    expect(tables.prices.unitPrice('h100-80g', 'production', later)).toBeCloseTo(3.25 * 1.5, 10);
    expect(tables.prices.unitPrice('h100-80g', 'training', later)).toBeCloseTo(3.25, 10);
    expect(tables.prices.changesWithin('h100-80g', 'production', at.getTime() - 1, later)).toContain(
      at.getTime(),
    );
  });

  it("applies the tenant filter: another tenant's project is not found", async () => {
    const all = scopedEntityManager(t.app.orm, { all: true });
    const aurora = await all.findOneOrFail(Tenant, { slug: 'aurora-research' });
    const borealis = await all.findOneOrFail(Tenant, { slug: 'borealis-inference' });
    const theirs = await all.find(Project, { tenant: borealis.id });
    expect(theirs.length).toBeGreaterThan(0);
    const mine = t.app.orm.em.fork({ clear: true });
    mine.setFilterParams(TENANT_FILTER, { tenantIds: [aurora.id] });
    for (const project of theirs) expect(await findPlain(mine, Project, { id: project.id })).toEqual([]);
    const own = await all.find(Project, { tenant: aurora.id });
    expect((await findPlain(mine, Project, { id: own[0]!.id })).map((p) => p.id)).toEqual([own[0]!.id]);
  });
});
