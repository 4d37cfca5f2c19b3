// GPU-hours lost to preemption, beside the preemption counter: per victim queue and reason, in
// declared time (the core's lost GPU-ms are in the backend's clock, × the time scale).
import { describe, expect, it } from 'vitest';
import type { Preemption } from '../../src/core/scheduling/types.js';
import { createMetrics } from '../../src/server/metrics/registry.js';

const HOUR = 3_600_000;

function preemption(victimQueue: string, reason: Preemption['reason'], lostGpuMs?: number): Preemption {
  return {
    victimId: `v-${victimQueue}-${reason}-${lostGpuMs}`,
    victimQueue,
    preemptorId: 'p',
    preemptorQueue: 'other',
    reason,
    at: 0,
    ...(lostGpuMs !== undefined ? { lostGpuMs } : {}),
  };
}

async function samples(metrics: ReturnType<typeof createMetrics>, name: string) {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? []).map((v) => ({ labels: v.labels, value: v.value }));
}

describe('fairway_scheduler_preemption_lost_gpu_hours_total', () => {
  it("adds each victim's lost GPU-hours per queue and reason, scaled to declared time", async () => {
    const metrics = createMetrics({ timeScale: 60 });
    // 8 GPUs × 1 backend minute = 8 declared GPU-hours at time scale 60.
    metrics.observeCycle(
      0.001,
      [],
      [
        preemption('a', 'reclaim', (8 * HOUR) / 60),
        preemption('a', 'reclaim', HOUR / 60),
        preemption('b', 'priority', 0),
      ],
    );
    metrics.observeCycle(
      0.001,
      [],
      [preemption('a', 'fair-share', (2 * HOUR) / 60), preemption('a', 'reclaim', undefined)],
    );
    const lost = await samples(metrics, 'fairway_scheduler_preemption_lost_gpu_hours_total');
    const by = (queue: string, reason: string) =>
      lost.find((s) => s.labels.queue === queue && s.labels.reason === reason)?.value;
    expect(by('a', 'reclaim')).toBeCloseTo(9, 9);
    expect(by('a', 'fair-share')).toBeCloseTo(2, 9);
    // A victim that lost nothing (resumable) is counted at 0: the series exists beside its preemption.
    expect(by('b', 'priority')).toBe(0);
    // The preemption counter counts every victim, with or without a loss figure.
    const preempted = await samples(metrics, 'fairway_scheduler_preempted_total');
    expect(preempted.find((s) => s.labels.queue === 'a')?.value).toBe(4);
  });

  it('defaults to time scale 1', async () => {
    const metrics = createMetrics();
    metrics.observeCycle(0.001, [], [preemption('q', 'reclaim', 3 * HOUR)]);
    expect(
      (await samples(metrics, 'fairway_scheduler_preemption_lost_gpu_hours_total'))[0]?.value,
    ).toBeCloseTo(3, 9);
  });
});
