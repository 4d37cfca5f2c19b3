// Queue usage views (src/core/scheduling/queue-usage.ts) and the pending shape index
// (src/core/scheduling/pending-shapes.ts),
// called directly on a CoreState.
import { describe, expect, it } from 'vitest';
import { cancel, submit } from '../../../src/core/scheduling/jobs.js';
import { fragShapes, pendingShapes } from '../../../src/core/scheduling/pending-shapes.js';
import {
  anyOverNominal,
  historyAt,
  historyChange,
  overNominal,
  weightedShare,
  withinNominal,
} from '../../../src/core/scheduling/queue-usage.js';
import { GPU } from '../../../src/core/scheduling/quota.js';
import { chargeQueue } from '../../../src/core/scheduling/trail.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { gpuUsage, makeCore, queueOf } from '../core-builders.js';

describe('queue usage', () => {
  const cohort = (weightA = 1) =>
    makeCore({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4).weight(weightA),
        makeQueue('b').cohort('c').nominal('h100', 12),
      ],
      options: { fairSharing: { enabled: true, usageHalfLifeMs: 60_000 } },
    });

  it('weighted share: borrowed × 1000 / lendable, over the weight; 0 while within nominal', () => {
    const { core } = cohort(2);
    const a = queueOf(core, 'a');
    expect(a.lendable[GPU]).toBe(16_000); // what the cohort could give
    chargeQueue(a, gpuUsage('h100', 4), 1);
    expect(weightedShare(a)).toBe(0);
    expect(overNominal(a, 'h100', GPU)).toBe(false);
    chargeQueue(a, gpuUsage('h100', 4), 1);
    expect(weightedShare(a)).toBe((4000 * 1000) / 16_000 / 2);
    expect(overNominal(a, 'h100', GPU)).toBe(true);
    expect(anyOverNominal(a)).toBe(true);
  });

  it('weight 0 while borrowing is an infinite share', () => {
    const { core } = cohort(0);
    const a = queueOf(core, 'a');
    chargeQueue(a, gpuUsage('h100', 5), 1);
    expect(weightedShare(a)).toBe(Number.POSITIVE_INFINITY);
  });

  it('the share is cached per usage version: a usage change is seen at once', () => {
    const { core } = cohort();
    const a = queueOf(core, 'a');
    chargeQueue(a, gpuUsage('h100', 6), 1);
    const s1 = weightedShare(a);
    expect(a.shareCache.version).toBe(a.usageVersion);
    chargeQueue(a, gpuUsage('h100', 2), -1);
    expect(weightedShare(a)).toBeLessThan(s1);
  });

  it('within nominal with a request: only declared resources count', () => {
    const { core } = cohort();
    const a = queueOf(core, 'a');
    expect(withinNominal(a, new Map([['h100', [4000, 1_000_000, 0]]]))).toBe(true); // cpu not declared
    expect(withinNominal(a, gpuUsage('h100', 5))).toBe(false);
  });

  it('decayed history: the closed form of a constant rate, halved after one half-life without usage', () => {
    const { core } = cohort();
    const a = queueOf(core, 'a');
    const t0 = a.history.at;
    historyChange(core, a, t0, 2000, 0); // 2 GPUs from t0
    const h = 60_000;
    expect(historyAt(core, a, t0 + h)).toBeCloseTo(2 * (h / Math.LN2) * 0.5, 6);
    historyChange(core, a, t0 + h, -2000, 0);
    const v = historyAt(core, a, t0 + h);
    expect(historyAt(core, a, t0 + 2 * h)).toBeCloseTo(v / 2, 6);
  });
});

describe('pending shape index', () => {
  it('counts pending pods per shape and forgets a shape with its last job', () => {
    const { core } = makeCore({
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 0)],
      options: { placement: 'fragmentation-aware' },
    });
    submit(core, makeJob('x').queue('a').gpus(2).pods(3).build());
    submit(core, makeJob('y').queue('a').gpus(2).build());
    submit(core, makeJob('z').queue('a').gpus(1).build());
    expect(pendingShapes(core).map((s) => [s.perPod.gpu, s.pods, s.jobs])).toEqual([
      [2, 4, 2],
      [1, 1, 1],
    ]);
    expect(fragShapes(core, 'h100').map((s) => [s.gpu, s.weight])).toEqual([
      [2000, 0.8],
      [1000, 0.2],
    ]);
    cancel(core, 'z');
    expect(pendingShapes(core).map((s) => s.perPod.gpu)).toEqual([2]);
    expect(fragShapes(core, 'h100').map((s) => [s.gpu, s.weight])).toEqual([[2000, 1]]); // cache cleared
  });
});
