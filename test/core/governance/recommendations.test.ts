// Recommendations from usage history: under-used queues → shared pool, constant
// borrowers → more nominal or a dedicated pool; thresholds, minimum history, order, evidence.
import { describe, expect, it } from 'vitest';
import { type QueueUsageHistory, recommend } from '../../../src/core/governance/index.js';

const h = (queue: string, over: Partial<QueueUsageHistory> = {}): QueueUsageHistory => ({
  queue,
  tenant: 't1',
  nominalGpus: 16,
  hours: 720,
  meanUsedGpus: 8,
  peakUsedGpus: 16,
  hoursBorrowing: 0,
  meanBorrowedGpus: 0,
  ...over,
});

describe('recommend', () => {
  it('UNDER_USED: mean use below 30 % of nominal → shared pool, nominal down to the peak (never up)', () => {
    const [r, ...rest] = recommend([h('idle', { meanUsedGpus: 2.1, peakUsedGpus: 5.2 })]);
    expect(rest).toEqual([]);
    expect(r).toMatchObject({
      queue: 'idle',
      tenant: 't1',
      kind: 'UNDER_USED',
      suggestion: 'SHARED_POOL',
      currentNominalGpus: 16,
      suggestedNominalGpus: 6,
    });
    expect(r!.evidence).toBe(
      'over 720 h: mean use 2.1 GPUs, peak 5.2, nominal 16; mean use is 13 % of nominal (below 30 %), borrowed in 0 % of the hours',
    );
    // A peak at or above nominal keeps the nominal.
    expect(recommend([h('spiky', { meanUsedGpus: 1, peakUsedGpus: 20 })])[0]).toMatchObject({
      kind: 'UNDER_USED',
      suggestedNominalGpus: 16,
    });
    // Exactly 30 %: not under-used. Nominal 0: never under-used.
    expect(recommend([h('edge', { meanUsedGpus: 4.8 })])).toEqual([]);
    expect(recommend([h('none', { nominalGpus: 0, meanUsedGpus: 0, peakUsedGpus: 0 })])).toEqual([]);
  });

  it('CONSTANT_BORROWER: borrowing in more than 70 % of the hours → dedicated pool, nominal up to the mean use', () => {
    const [r] = recommend([
      h('hungry', { meanUsedGpus: 20.25, peakUsedGpus: 30, hoursBorrowing: 600, meanBorrowedGpus: 4.5 }),
    ]);
    expect(r).toMatchObject({
      kind: 'CONSTANT_BORROWER',
      suggestion: 'DEDICATED_POOL',
      currentNominalGpus: 16,
      suggestedNominalGpus: 21,
    });
    expect(r!.evidence).toBe(
      'over 720 h: mean use 20.3 GPUs, peak 30, nominal 16; borrowed in 600 of 720 h (83 %, above 70 %), 4.5 GPUs borrowed on average',
    );
    // Exactly 70 %: no. Whole numbers stay whole (no float noise upwards).
    expect(recommend([h('edge', { hoursBorrowing: 504 })])).toEqual([]);
    expect(
      recommend([h('whole', { hoursBorrowing: 700, meanUsedGpus: 18.000000000001 })])[0]!
        .suggestedNominalGpus,
    ).toBe(18);
    // Nominal 0 borrowing all the time: a nominal is suggested.
    expect(
      recommend([h('zero', { nominalGpus: 0, meanUsedGpus: 3.5, hoursBorrowing: 720 })])[0],
    ).toMatchObject({ kind: 'CONSTANT_BORROWER', suggestedNominalGpus: 4 });
  });

  it('needs minHours of history, takes options, and sorts by tenant then queue', () => {
    const under = { meanUsedGpus: 1, peakUsedGpus: 2 };
    expect(recommend([h('short', { ...under, hours: 23.9 })])).toEqual([]);
    expect(recommend([h('short', { ...under, hours: 0 })], { minHours: 0 })).toEqual([]);
    expect(recommend([h('short', { ...under, hours: 12 })], { minHours: 12 })).toHaveLength(1);
    expect(recommend([h('mid', { meanUsedGpus: 6 })], { underUseBelow: 0.5 })).toMatchObject([
      { kind: 'UNDER_USED' },
    ]);
    expect(recommend([h('mid', { hoursBorrowing: 400 })], { borrowingShareAbove: 0.5 })).toMatchObject([
      { kind: 'CONSTANT_BORROWER' },
    ]);
    const out = recommend([
      h('b', { tenant: 't2', ...under }),
      h('a', { tenant: 't2', ...under }),
      h('z', { tenant: 't1', hoursBorrowing: 720, meanUsedGpus: 20 }),
      h('ok', { tenant: 't0' }),
    ]);
    expect(out.map((r) => `${r.tenant}/${r.queue}`)).toEqual(['t1/z', 't2/a', 't2/b']);
  });

  it('one recommendation per queue: a borrower that also looks under-used (inconsistent figures) is a borrower', () => {
    expect(recommend([h('odd', { meanUsedGpus: 1, hoursBorrowing: 700 })])).toMatchObject([
      { kind: 'CONSTANT_BORROWER', suggestedNominalGpus: 16 },
    ]);
  });
});
