import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocationOf } from '../../../src/core/metering/allocation.js';
import { PriceBook } from '../../../src/persistence/metering/price-book.js';
import {
  type ChargeableJob,
  hourlyDeltas,
  type LedgerContext,
  ledgerRows,
  segmentsOf,
} from '../../../src/services/metering/ledger.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);

const job = (over: Partial<ChargeableJob> = {}): ChargeableJob => ({
  id: 'job-1',
  tenantId: 'tenant-1',
  projectId: 'project-1',
  queueId: 'queue-1',
  userId: 'user-1',
  priorityClass: 'training',
  podSets: [
    { name: 'workers', count: 4, perPod: { gpu: 2, cpu: 8000, memory: 65536 } },
    { name: 'mig', count: 3, perPod: { gpu: 1, cpu: 1000, memory: 1024 } },
  ],
  admission: {
    jobId: 'job-1',
    queue: 'q',
    at: T0,
    borrowed: false,
    mode: 'fit',
    podSets: [
      { name: 'workers', flavor: 'h100', count: 4, placements: [{ node: 'n1', pods: 4 }] },
      { name: 'mig', flavor: 'a100-1g', count: 3, placements: [{ node: 'n2', pods: 3 }] },
    ],
  },
  ...over,
});

const flavors = new Map([
  ['h100', { kind: 'gpu' as const, slicesPerGpu: null }],
  ['a100-1g', { kind: 'mig' as const, slicesPerGpu: 7 }],
]);

const context = (prices: PriceBook, timeScale = 1): LedgerContext => ({
  tables: { prices, flavors },
  timeScale,
});

describe('allocation', () => {
  it('counts MIG slices as their fraction of a device and prices them per slice', () => {
    const [mig, h100] = allocationOf(job().podSets, job().admission!, flavors);
    expect(h100).toEqual({ flavor: 'h100', gpuUnits: 8, gpuDevices: 8, cpuCores: 32, memoryGib: 256 });
    expect(mig!.gpuUnits).toBe(3);
    expect(mig!.gpuDevices).toBeCloseTo(3 / 7, 12);
  });

  it('charges a gang admitted below its count for the pods admitted', () => {
    const j = job();
    j.admission!.podSets[0]!.count = 2;
    expect(allocationOf(j.podSets, j.admission!, flavors).find((a) => a.flavor === 'h100')!.gpuUnits).toBe(4);
  });
});

describe('ledger rows', () => {
  it('split at hour boundaries and price changes; a later price never reprices earlier time', () => {
    const prices = new PriceBook(
      [
        { flavor: 'h100', effectiveFrom: 0, pricePerUnitHour: 2 },
        { flavor: 'h100', effectiveFrom: T0 + 30 * 60_000, pricePerUnitHour: 3 },
      ],
      [{ priorityClass: 'training', effectiveFrom: 0, multiplier: 0.5 }],
    );
    const rows = ledgerRows(job(), T0 + 10 * 60_000, T0 + 70 * 60_000, 'checkpoint', context(prices), {
      firstOfJob: true,
      utilization: 0.5,
    });
    const h100 = rows.filter((r) => r.flavor === 'h100');
    expect(
      h100.map((r) => [r.startedAt.getTime() - T0, r.endedAt.getTime() - T0].map((m) => m / 60_000)),
    ).toEqual([
      [10, 30],
      [30, 60],
      [60, 70],
    ]);
    expect(h100.map((r) => r.unitPricePerHour)).toEqual([1, 1.5, 1.5]);
    // 8 GPUs × (20 min × 1 + 40 min × 1.5) per hour.
    expect(h100.reduce((s, r) => s + r.cost, 0)).toBeCloseTo(8 * (20 / 60) * 1 + 8 * (40 / 60) * 1.5, 9);
    expect(rows.filter((r) => r.firstOfJob)).toHaveLength(1);
    expect(h100[0]!.usedGpuSeconds).toBeCloseTo(0.5 * 8 * 20 * 60, 6);
  });

  it('charges scaled time on a faster-than-real backend', () => {
    const prices = new PriceBook([{ flavor: 'h100', effectiveFrom: 0, pricePerUnitHour: 1 }], []);
    const rows = ledgerRows(job(), T0, T0 + 60_000, 'succeeded', context(prices, 60), {
      firstOfJob: false,
      utilization: null,
    });
    const h100 = rows.find((r) => r.flavor === 'h100')!;
    expect(h100.durationMs).toBe(60_000);
    expect(h100.gpuSeconds).toBe(8 * 3600);
    expect(h100.cost).toBeCloseTo(8, 9);
    expect(h100.usedGpuSeconds).toBeNull();
  });

  it('property: rows tile the charged span exactly, never cross an hour or a price change, and roll up to their own sums', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5 * HOUR }),
        fc.integer({ min: 1, max: 9 * HOUR }),
        fc.array(fc.integer({ min: 0, max: 15 * HOUR }), { maxLength: 4 }),
        fc.double({ min: 0, max: 10, noNaN: true }),
        (offset, span, changes, price) => {
          const from = T0 + offset;
          const to = from + span;
          const prices = new PriceBook(
            [
              { flavor: 'h100', effectiveFrom: 0, pricePerUnitHour: price },
              ...changes.map((c, i) => ({
                flavor: 'h100',
                effectiveFrom: T0 + c,
                pricePerUnitHour: price + i + 1,
              })),
            ],
            [],
          );
          const rows = ledgerRows(job(), from, to, 'checkpoint', context(prices), {
            firstOfJob: false,
            utilization: 0.25,
          });
          for (const flavor of ['h100', 'a100-1g']) {
            const mine = rows.filter((r) => r.flavor === flavor);
            expect(mine.reduce((s, r) => s + r.durationMs, 0)).toBe(span);
            for (let i = 0; i < mine.length; i++) {
              const r = mine[i]!;
              if (i > 0) expect(r.startedAt.getTime()).toBe(mine[i - 1]!.endedAt.getTime());
              expect(Math.floor(r.startedAt.getTime() / HOUR)).toBe(
                Math.floor((r.endedAt.getTime() - 1) / HOUR),
              );
              if (flavor === 'h100')
                for (const c of changes)
                  expect(T0 + c <= r.startedAt.getTime() || T0 + c >= r.endedAt.getTime()).toBe(true);
            }
          }
          const deltas = hourlyDeltas(rows);
          const sum = (xs: { gpuSeconds: number; cost: number }[]) =>
            xs.reduce((a, r) => [a[0]! + r.gpuSeconds, a[1]! + r.cost], [0, 0]);
          const [g1, c1] = sum(rows);
          const [g2, c2] = sum(deltas);
          expect(g2).toBeCloseTo(g1!, 6);
          expect(c2).toBeCloseTo(c1!, 6);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('segments: an empty or reversed span has none', () => {
    expect(segmentsOf(T0, T0)).toEqual([]);
    expect(
      ledgerRows(job(), T0, T0 - 1, 'checkpoint', context(new PriceBook([], [])), {
        firstOfJob: false,
        utilization: null,
      }),
    ).toEqual([]);
  });
});
