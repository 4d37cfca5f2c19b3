import { describe, expect, it } from 'vitest';
import type { NodeStatus } from '../../src/core/scheduling/index.js';
import type { ReplayOutcome, SimJob } from '../../src/simulator/engine.js';
import { fragmentation } from '../../src/simulator/fragmentation.js';
import {
  computeReplayMetrics,
  entitlement,
  jain,
  percentile,
  waterFill,
} from '../../src/simulator/metrics.js';

const S = 1000;

function job(p: Partial<SimJob> & Pick<SimJob, 'id' | 'tenant' | 'gpus' | 'submitMs'>): SimJob {
  return {
    line: 0,
    queue: `q-${p.tenant}`,
    durationMs: 0,
    firstStartMs: null,
    endMs: null,
    starts: 0,
    slaEligible: false,
    previewMode: 'none',
    ...p,
  };
}

/**
 * 4 GPUs, tenants A and B with nominal 2 each. Window 0–120 s.
 *  a1: A, 2 GPUs, runs 0–100.                  eligible
 *  a2: A, 2 GPUs, runs 0–40, reclaimed at 40 by b1, reruns 60–100.
 *  b1: B, 2 GPUs, submitted 30, runs 40–60.     eligible, waits 10 s
 *  c1: B, 8 GPUs, submitted 100, never starts (censored wait 20 s).
 */
function outcome(): ReplayOutcome {
  return {
    kind: 'replay',
    policy: 'fairway',
    placement: 'best-fit',
    capacityGpus: 4,
    windowStart: 0,
    windowEnd: 120 * S,
    endMs: 120 * S,
    tenants: [
      { name: 'A', nominalGpus: 2, weight: 1 },
      { name: 'B', nominalGpus: 2, weight: 1 },
    ],
    jobs: [
      job({
        id: 'a1',
        tenant: 'A',
        gpus: 2,
        submitMs: 0,
        firstStartMs: 0,
        endMs: 100 * S,
        starts: 1,
        slaEligible: true,
        previewMode: 'fit',
      }),
      job({
        id: 'a2',
        tenant: 'A',
        gpus: 2,
        submitMs: 0,
        firstStartMs: 0,
        endMs: 100 * S,
        starts: 2,
        previewMode: 'borrow',
      }),
      job({
        id: 'b1',
        tenant: 'B',
        gpus: 2,
        submitMs: 30 * S,
        firstStartMs: 40 * S,
        endMs: 60 * S,
        starts: 1,
        slaEligible: true,
        previewMode: 'preempt',
      }),
      job({ id: 'c1', tenant: 'B', gpus: 8, submitMs: 100 * S, previewMode: 'pending' }),
    ],
    segments: [
      { job: 0, tenant: 'A', start: 0, end: 100 * S, gpus: 2, preempted: false },
      { job: 1, tenant: 'A', start: 0, end: 40 * S, gpus: 2, preempted: true },
      { job: 2, tenant: 'B', start: 40 * S, end: 60 * S, gpus: 2, preempted: false },
      { job: 1, tenant: 'A', start: 60 * S, end: 100 * S, gpus: 2, preempted: false },
    ],
    preemptions: [
      {
        at: 40 * S,
        reason: 'reclaim',
        victimId: 'a2',
        victimTenant: 'A',
        preemptorId: 'b1',
        preemptorTenant: 'B',
        gpus: 2,
        lostGpuMs: 2 * 40 * S,
      },
    ],
    frag: { freeGpuMs: 1000, unusableGpuMs: 250 },
    etaSampled: false,
    stats: { events: 0, cycles: 0, previews: 0, explains: 0, explainMs: 0 },
  };
}

describe('metric helpers', () => {
  it('nearest-rank percentiles', () => {
    const a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(a, 50)).toBe(5);
    expect(percentile(a, 95)).toBe(10);
    expect(percentile(a, 10)).toBe(1);
    expect(percentile([], 50)).toBeNull();
  });
  it("Jain's index", () => {
    expect(jain([1, 1, 1])).toBe(1);
    expect(jain([1, 0, 0, 0])).toBe(0.25);
    expect(jain([2, 1])).toBeCloseTo(9 / 10, 12);
  });
  it('weighted water-filling redistributes what capped entries leave', () => {
    // level 9/4 caps the middle entry at 1; the other 8 split 1:2
    const w = waterFill([10, 1, 10], [1, 1, 2], 9);
    expect(w[0]).toBeCloseTo(8 / 3, 12);
    expect(w[1]).toBe(1);
    expect(w[2]).toBeCloseTo(16 / 3, 12);
    expect(waterFill([1, 1], [1, 0], 5)).toEqual([1, 0]);
  });
  it('entitlement: nominal first, then the rest by weight, capped by demand', () => {
    const t = [
      { name: 'a', nominalGpus: 6, weight: 1 },
      { name: 'b', nominalGpus: 2, weight: 3 },
      { name: 'c', nominalGpus: 0, weight: 0 },
    ];
    // demand a 10, b 10, c 10 on 12 GPUs: g=(6,2,0), 4 left split 1:3 → (7,5,0)
    expect(entitlement([10, 10, 10], t, 12)).toEqual([7, 5, 0]);
    // only c (weight 0) wants more: it gets what nobody else needs
    expect(entitlement([1, 0, 10], t, 12)).toEqual([1, 0, 10]);
    // over-subscribed nominal: capacity shared by nominal
    expect(entitlement([6, 2, 0], t, 4)).toEqual([3, 1, 0]);
  });
});

describe('replay metrics from job records (hand-computed)', () => {
  const m = computeReplayMetrics(outcome());
  it('time-weighted allocation ratio over the window', () => {
    expect(m.allocationRatio).toBeCloseTo(400 / 480, 6);
    // a2's first run (2 GPUs × 40 s) was lost to preemption
    expect(m.usefulAllocationRatio).toBeCloseTo(320 / 480, 6);
    expect(m.tenants[0]!.allocationShare).toBeCloseTo(360 / 480, 6);
  });
  it('waits with never-started jobs censored at the end', () => {
    // waits 0, 0, 10, 20 s
    expect(m.waitSeconds).toMatchObject({ count: 4, p50: 0, p95: 20, p99: 20, mean: 7.5 });
    expect(m.tenants[1]!.waitSeconds).toMatchObject({ p50: 10, p99: 20 });
    expect(m.unstarted).toBe(1);
    expect(m.tenants[1]!.unstarted).toBe(1);
  });
  it('SLA attainment counts eligible jobs started within the deadline', () => {
    expect(m.sla).toEqual({ eligible: 2, met: 2, attainment: 1 });
    const strict = computeReplayMetrics(outcome(), { slaSeconds: 5 });
    expect(strict.sla).toEqual({ eligible: 2, met: 1, attainment: 0.5 });
    expect(strict.tenants[1]!.sla.attainment).toBe(0);
  });
  it("Jain's index over received / entitled GPU-time", () => {
    // entitled A: 4·30 + 2·30 + 4·40 = 340; B: 2·30 + 4·20 (c1 over 100–120) = 140 GPU·s
    expect(m.tenants[0]!.gpuHoursEntitled).toBeCloseTo(340 / 3600, 6);
    expect(m.tenants[1]!.gpuHoursEntitled).toBeCloseTo(140 / 3600, 6);
    expect(m.tenants[0]!.gpuHoursReceived).toBeCloseTo(360 / 3600, 6);
    const xa = 360 / 340;
    const xb = 40 / 140;
    expect(m.tenants[1]!.fairnessRatio).toBeCloseTo(xb, 6);
    expect(m.jainIndex).toBeCloseTo((xa + xb) ** 2 / (2 * (xa * xa + xb * xb)), 6);
  });
  it('preemptions: count, GPU-hours lost, per reason, per victim tenant; fragmentation ratio', () => {
    expect(m.preemptions).toEqual({
      count: 1,
      gpuHoursLost: 0.022222,
      byReason: { reclaim: { count: 1, gpuHoursLost: 0.022222 } },
    });
    expect(m.tenants[0]!.preemptionsSuffered.count).toBe(1);
    expect(m.tenants[1]!.preemptionsSuffered.count).toBe(0);
    expect(m.fragmentationRatio).toBe(0.25);
    expect(m.previewAtSubmit).toEqual({ borrow: 1, fit: 1, pending: 1, preempt: 1 });
  });
  it('timeline buckets hold the mean allocation per tenant', () => {
    const m2 = computeReplayMetrics(outcome(), { buckets: 6 }); // 20 s buckets
    expect(m2.timeline.bucketMs).toBe(20 * S);
    expect(m2.timeline.allocation[0]).toEqual([4, 4, 2, 4, 4, 0]);
    expect(m2.timeline.allocation[1]).toEqual([0, 0, 2, 0, 0, 0]);
    expect(m2.timeline.preemptions[2]).toEqual({ reclaim: 1 });
  });
});

function node(
  name: string,
  free: number[],
  cpuFree = 64000,
  kind: NodeStatus['kind'] = 'gpu',
  flavor = 'h100',
): NodeStatus {
  return {
    name,
    pool: 'p',
    flavor,
    kind,
    capacity: { gpu: free.length, cpu: 64000, memory: 512000 },
    free: { gpu: free.reduce((s, x) => s + x, 0), cpu: cpuFree, memory: 512000 },
    gpus: free.map((f, index) => ({ index, capacity: 1, free: f })),
  };
}

describe('fragmentation', () => {
  const nodes = [node('n1', [1, 1, 0.5, 0]), node('n2', [1, 0, 0, 0])];
  it('whole-GPU shapes cannot use partial GPUs nor nodes with too few free GPUs', () => {
    // free: n1 2.5, n2 1 = 3.5; a 2-GPU pod can use n1's two free GPUs only
    expect(fragmentation(nodes, [{ gpu: 2, cpu: 0, memory: 0 }])).toEqual({ free: 3.5, unusable: 1.5 });
    expect(fragmentation(nodes, [{ gpu: 3, cpu: 0, memory: 0 }])).toEqual({ free: 3.5, unusable: 3.5 });
  });
  it('any shape that fits makes the capacity usable', () => {
    expect(
      fragmentation(nodes, [
        { gpu: 2, cpu: 0, memory: 0 },
        { gpu: 0.5, cpu: 0, memory: 0 },
        { gpu: 1, cpu: 0, memory: 0 },
      ]),
    ).toEqual({ free: 3.5, unusable: 0 });
    expect(fragmentation(nodes, [{ gpu: 0.6, cpu: 0, memory: 0 }])).toEqual({ free: 3.5, unusable: 0.5 });
  });
  it('cpu, flavor and GPU-less shapes', () => {
    const tight = [node('n1', [1, 1], 500), node('n2', [1], 64000, 'gpu', 'a100')];
    expect(fragmentation(tight, [{ gpu: 1, cpu: 1000, memory: 0 }])).toEqual({ free: 3, unusable: 2 });
    expect(fragmentation(tight, [{ gpu: 1, cpu: 0, memory: 0, flavors: ['h100'] }])).toEqual({
      free: 3,
      unusable: 1,
    });
    expect(fragmentation(tight, [{ gpu: 0, cpu: 100, memory: 0 }])).toEqual({ free: 3, unusable: 3 });
  });
});
