import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { FlavorPrice } from '../../../src/persistence/metering/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { unitPriceAt } from '../../../src/services/metering/price-book.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { enc, seedStandardUsage } from '../../helpers/usage-seed.js';

/**
 * The price book: versions by effective date, never in the past, set by platform admins only,
 * every change audited; a scheduled price changes no cost already in the ledger.
 */
let t: TestApp;
let platform: string;
let seed: Awaited<ReturnType<typeof seedStandardUsage>>;
const BOOK = `{ priceBook { currency flavorPrices { flavor pricePerUnitHour effectiveFrom current } multipliers { priorityClass multiplier effectiveFrom current } } }`;
const SET_PRICE = `mutation($in: SetFlavorPriceInput!) { setFlavorPrice(input: $in) { flavor pricePerUnitHour effectiveFrom current } }`;
const SET_MULTIPLIER = `mutation($in: SetPriceMultiplierInput!) { setPriceMultiplier(input: $in) { priorityClass multiplier effectiveFrom current } }`;
const iso = (ms: number) => new Date(ms).toISOString();

beforeAll(async () => {
  t = await startTestApp();
  platform = t.token(null, 'PLATFORM_ADMIN');
  seed = await seedStandardUsage(t);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('price book', () => {
  it("the demo's flavors and a new flavor carry their creation price from epoch 0; anyone signed in reads it", async () => {
    await expectOk(
      t,
      platform,
      `mutation { createFlavor(input: { name: "l40s-48g", kind: GPU, pricePerUnitHour: 1.1 }) { id } }`,
    );
    const book = (await expectOk(t, t.token('aurora-research', 'VIEWER'), BOOK)).priceBook;
    expect(book.currency).toBe('USD');
    expect(book.flavorPrices).toEqual(
      expect.arrayContaining([
        {
          flavor: 'h100-80g',
          pricePerUnitHour: 2.49,
          effectiveFrom: '1970-01-01T00:00:00.000Z',
          current: true,
        },
        {
          flavor: 'a100-1g.10gb',
          pricePerUnitHour: 0.45,
          effectiveFrom: '1970-01-01T00:00:00.000Z',
          current: true,
        },
        {
          flavor: 'l40s-48g',
          pricePerUnitHour: 1.1,
          effectiveFrom: '1970-01-01T00:00:00.000Z',
          current: true,
        },
      ]),
    );
    expect(codesOf(await t.gql(null, BOOK))).toEqual(['UNAUTHENTICATED']);
  });

  it('a scheduled price shows as scheduled, takes effect at its time, and changes no cost already charged', async () => {
    const usage = `query($t: ID!) { usage(tenantId: $t, from: "2026-09-01T00:00:00Z", to: "2026-12-01T00:00:00Z") { total { cost } } }`;
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const before = (await expectOk(t, admin, usage, { t: enc('Tenant', seed.aurora.tenant.id) })).usage.total
      .cost;
    const from = Math.ceil(t.now.value / 1000) * 1000 + 3_600_000;
    const set = (
      await expectOk(t, platform, SET_PRICE, {
        in: { flavor: 'h100-80g', pricePerUnitHour: 3.99, effectiveFrom: iso(from) },
      })
    ).setFlavorPrice;
    expect(set).toEqual({
      flavor: 'h100-80g',
      pricePerUnitHour: 3.99,
      effectiveFrom: iso(from),
      current: false,
    });
    const book = (await expectOk(t, platform, BOOK)).priceBook.flavorPrices.filter(
      (p: any) => p.flavor === 'h100-80g',
    );
    expect(book).toEqual([
      {
        flavor: 'h100-80g',
        pricePerUnitHour: 2.49,
        effectiveFrom: '1970-01-01T00:00:00.000Z',
        current: true,
      },
      { flavor: 'h100-80g', pricePerUnitHour: 3.99, effectiveFrom: iso(from), current: false },
    ]);
    expect(
      (await expectOk(t, admin, usage, { t: enc('Tenant', seed.aurora.tenant.id) })).usage.total.cost,
    ).toBe(before);

    // The multiplier composes with the flavor price at the instant asked.
    await expectOk(t, platform, SET_MULTIPLIER, {
      in: { priorityClass: 'training', multiplier: 1.5, effectiveFrom: iso(from) },
    });
    const em = systemEntityManager(t.app.orm).fork();
    expect(await unitPriceAt(em, 'h100-80g', 'training', new Date(from - 1))).toBeCloseTo(2.49, 9);
    expect(await unitPriceAt(em, 'h100-80g', 'training', new Date(from))).toBeCloseTo(3.99 * 1.5, 9);
    expect(await unitPriceAt(em, 'h100-80g', 'experiment', new Date(from))).toBeCloseTo(3.99, 9);

    t.now.value = from + 1000;
    const later = (await expectOk(t, platform, BOOK)).priceBook;
    expect(later.flavorPrices.filter((p: any) => p.flavor === 'h100-80g')).toEqual([
      { flavor: 'h100-80g', pricePerUnitHour: 3.99, effectiveFrom: iso(from), current: true },
    ]);
    expect(later.multipliers).toEqual([
      { priorityClass: 'training', multiplier: 1.5, effectiveFrom: iso(from), current: true },
    ]);
    expect(
      (await expectOk(t, admin, usage, { t: enc('Tenant', seed.aurora.tenant.id) })).usage.total.cost,
    ).toBe(before);
  });

  it('refuses a past effectiveFrom, a negative price, an unknown flavor or class, and a second version at the same instant', async () => {
    const past = iso(t.now.value - 60_000);
    expect(
      codesOf(
        await t.gql(platform, SET_PRICE, {
          in: { flavor: 'h100-80g', pricePerUnitHour: 1, effectiveFrom: past },
        }),
      ),
    ).toEqual(['BAD_USER_INPUT']);
    expect(
      codesOf(
        await t.gql(platform, SET_MULTIPLIER, {
          in: { priorityClass: 'training', multiplier: 2, effectiveFrom: past },
        }),
      ),
    ).toEqual(['BAD_USER_INPUT']);
    expect(
      codesOf(await t.gql(platform, SET_PRICE, { in: { flavor: 'h100-80g', pricePerUnitHour: -1 } })),
    ).toEqual(['BAD_USER_INPUT']);
    expect(
      codesOf(await t.gql(platform, SET_PRICE, { in: { flavor: 'no-such-flavor', pricePerUnitHour: 1 } })),
    ).toEqual(['NOT_FOUND']);
    expect(
      codesOf(
        await t.gql(platform, SET_MULTIPLIER, { in: { priorityClass: 'no-such-class', multiplier: 1 } }),
      ),
    ).toEqual(['NOT_FOUND']);
    const at = iso(t.now.value + 7_200_000);
    await expectOk(t, platform, SET_PRICE, {
      in: { flavor: 'a100-1g.10gb', pricePerUnitHour: 0.5, effectiveFrom: at },
    });
    expect(
      codesOf(
        await t.gql(platform, SET_PRICE, {
          in: { flavor: 'a100-1g.10gb', pricePerUnitHour: 0.6, effectiveFrom: at },
        }),
      ),
    ).toEqual(['CONFLICT']);
  });

  it('only platform admins set prices; every attempt is audited, and a refusal writes no price', async () => {
    const em = systemEntityManager(t.app.orm).fork();
    const prices = await em.count(FlavorPrice, {});
    for (const role of ['TENANT_ADMIN', 'MEMBER', 'AUDITOR'] as const) {
      const res = await t.gql(t.token('aurora-research', role), SET_PRICE, {
        in: { flavor: 'h100-80g', pricePerUnitHour: 0.01 },
      });
      expect(codesOf(res)).toEqual(['FORBIDDEN']);
      expect(
        codesOf(
          await t.gql(t.token('aurora-research', role), SET_MULTIPLIER, {
            in: { priorityClass: 'training', multiplier: 0 },
          }),
        ),
      ).toEqual(['FORBIDDEN']);
    }
    expect(await em.fork().count(FlavorPrice, {})).toBe(prices);
    const events = await em
      .fork()
      .find(AuditEvent, { action: { $in: ['price.setFlavorPrice', 'price.setMultiplier'] } });
    const outcomes = (action: string) => events.filter((e) => e.action === action).map((e) => e.outcome);
    expect(outcomes('price.setFlavorPrice')).toEqual(expect.arrayContaining(['SUCCESS', 'DENIED', 'FAILED']));
    expect(outcomes('price.setMultiplier')).toEqual(expect.arrayContaining(['SUCCESS', 'DENIED']));
    const success = events.find((e) => e.action === 'price.setFlavorPrice' && e.outcome === 'SUCCESS')!;
    expect(success.input).toMatchObject({ flavor: 'h100-80g', pricePerUnitHour: 3.99 });
    expect(success.targetType).toBe('FlavorPrice');
    // A platform change is filed under no tenant: a tenant's auditors do not see the platform's price
    // changes.
    expect(success.tenant).toBeNull();
  });
});
