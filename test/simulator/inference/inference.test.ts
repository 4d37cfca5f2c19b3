// The inference comparison on tiny synthetic inputs: what each strategy does with the same
// service and training backlog, the bounds the replica jobs keep, and determinism.
import { describe, expect, it } from 'vitest';
import type { SimCluster } from '../../../src/simulator/cluster.js';
import type { SimInput } from '../../../src/simulator/engine.js';
import { parseCliArgs } from '../../../src/simulator/inference/cli.js';
import { ChangeTracker } from '../../../src/simulator/inference/metrics.js';
import { runInference } from '../../../src/simulator/inference/replay.js';
import { checkTargets, markdownReport } from '../../../src/simulator/inference/report.js';
import {
  generateServices,
  type ServiceSpec,
  serviceFrom,
} from '../../../src/simulator/inference/services.js';
import type { StrategyName } from '../../../src/simulator/inference/strategies.js';
import type { SimQueues } from '../../../src/simulator/queues.js';
import type { TraceJob } from '../../../src/simulator/trace.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 5); // a Monday, 00:00 UTC

/** One service of 1-GPU replicas: 5 for the static day peak, 3 for the night; minimums 3 by day, 2 by night. */
const service = (over: Partial<ServiceSpec> = {}): ServiceSpec => ({
  ...serviceFrom({
    name: 'chat',
    gpusPerReplica: 1,
    traffic: { seed: 11, meanRps: 20, amplitude: 0.8, peakHour: 14, noise: 0.05 },
    latency: { throughputPerReplica: 10, serviceP95Ms: 100, overloadP95Ms: 30_000 },
    signal: 'P95_LATENCY_MS',
    warmupMs: 60_000,
  }),
  ...over,
});

const cluster = (nodes: number): SimCluster => ({
  flavors: [{ name: 'gpu', kind: 'gpu', gpuModel: 'gpu' }],
  nodes: Array.from({ length: nodes }, (_, i) => ({
    name: `train-${i}`,
    pool: 'default',
    flavor: 'gpu',
    gpus: 8,
    cpu: 64_000,
    memory: 524_288,
  })),
});

const queues = (list: { name: string; nominal: number }[]): SimQueues => ({
  file: 'test-queues',
  cohorts: [{ line: 1, name: 'pool' }],
  queues: list.map((q, i) => ({
    line: i + 2,
    name: q.name,
    tenant: q.name,
    cohort: 'pool',
    quotas: { gpu: { gpu: { nominal: q.nominal } } },
  })),
});

/** Trace jobs with ids by position (`j2`, `j3`, … as trace lines), so two inputs built alike are equal. */
function jobs() {
  let line = 1;
  return (tenant: string, submitMs: number, durationMs: number, priority?: string): TraceJob => {
    line++;
    return {
      line,
      id: `j${line}`,
      submitMs,
      durationMs,
      tenant,
      gpus: 1,
      pods: 1,
      ...(priority ? { priority } : {}),
    };
  };
}

/** A training backlog larger than the pool for most of the day: 300 one-GPU jobs of 2 h, submitted as the services start. */
function backlog(): SimInput {
  const job = jobs();
  const trace: TraceJob[] = [];
  for (let i = 0; i < 150; i++) trace.push(job('team-a', T0, 2 * HOUR), job('team-b', T0, 2 * HOUR));
  return {
    trace,
    cluster: cluster(2),
    queues: queues([
      { name: 'team-a', nominal: 8 },
      { name: 'team-b', nominal: 8 },
    ]),
  };
}

const run = (input: SimInput, strategy: StrategyName, services: ServiceSpec[], days = 1) =>
  runInference(input, { strategy, services, startMs: T0, heldOutFromMs: T0, endMs: T0 + days * DAY });

describe('the inference comparison', () => {
  it('static holds its reservation through the trough; coordinated lends it to the training backlog', () => {
    const input = backlog();
    const st = run(input, 'static', [service()]).heldOut;
    const co = run(input, 'coordinated', [service()]).heldOut;
    // Same pool under both: 16 training GPUs + one 8-GPU node for the services.
    expect(run(input, 'static', [service()]).capacityGpus).toBe(24);
    // The backlog keeps the pool full under both: what static holds idle, coordinated runs training on.
    expect(st.allocation).toBe(1);
    expect(co.allocation).toBe(1);
    expect(st.replicaAllocation).toBeGreaterThan(co.replicaAllocation);
    expect(co.trainingAllocation).toBeGreaterThan(st.trainingAllocation + 0.02);
    expect(co.utilization).toBeGreaterThan(st.utilization);
    expect(co.trainingUnstarted).toBeLessThan(st.trainingUnstarted);
    // Static changes its count only where the day window opens and closes.
    expect(st.scaleEvents).toBe(2);
    // Only the first minute misses (every replica still warming up) under static.
    expect(st.slaAttainment).toBe(Math.round((1439 / 1440) * 1e6) / 1e6);
    expect(co.slaAttainment).toBeGreaterThan(0.99);
  });

  it('replicas planned by planReplicas never exceed maxReplicas, even when the signal asks for more', () => {
    const capped = service({ maxReplicas: 4 });
    for (const strategy of ['coordinated', 'independent'] as const) {
      const s = run(backlog(), strategy, [capped]).heldOut.services[0]!;
      expect(s.maxDesired).toBe(4); // the day peak needs 6 at the autoscalers' target: the cap binds
      expect(s.maxServing).toBeLessThanOrEqual(4);
    }
  });

  it('a lender reclaims burst replicas, never the guaranteed ones', () => {
    // team-a lends its idle nominal in the morning; the service's burst replicas borrow it; team-a's
    // jobs at noon reclaim it. team-b's long production jobs hold the cohort's spare GPUs, and the
    // younger burst replicas lose less work, so they are the victims.
    const job = jobs();
    const trace = [
      ...Array.from({ length: 5 }, () => job('team-b', T0 - 60_000, 2 * DAY, 'production')),
      ...Array.from({ length: 8 }, () => job('team-a', T0 + 12 * HOUR, 6 * HOUR)),
    ];
    const input: SimInput = {
      trace,
      cluster: cluster(1),
      queues: queues([
        { name: 'team-a', nominal: 8 },
        { name: 'team-b', nominal: 0 },
      ]),
    };
    const r = run(input, 'coordinated', [service()]);
    expect(r.heldOut.replicaPreemptions.production).toBeGreaterThan(0);
    expect(r.heldOut.replicaPreemptions['inference-critical']).toBeUndefined();
    expect(r.guaranteedPreempted).toBe(0);
    // team-a got its nominal back
    expect(r.heldOut.trainingUnstarted).toBe(0);
  });

  it("coordinated scales by the core's rule with its guards: over three days, no reversal after the first", () => {
    // Three days of the synthetic service (±5% noise) beside the backlog; the first day teaches the guards.
    const input = backlog();
    const r = runInference(input, {
      strategy: 'coordinated',
      services: [service()],
      startMs: T0,
      heldOutFromMs: T0 + DAY,
      endMs: T0 + 3 * DAY,
    });
    expect(r.heldOut.reversals).toBe(0);
    expect(r.heldOut.scaleEvents).toBeGreaterThan(0);
    const independent = runInference(input, {
      strategy: 'independent',
      services: [service()],
      startMs: T0,
      heldOutFromMs: T0 + DAY,
      endMs: T0 + 3 * DAY,
    });
    expect(independent.heldOut.reversals).toBeGreaterThan(0);
  });

  it('gives the same figures for the same seed, and other services for another seed', () => {
    const a = run(backlog(), 'coordinated', generateServices(7, 2));
    const b = run(backlog(), 'coordinated', generateServices(7, 2));
    expect(b).toEqual(a);
    expect(generateServices(8, 2)).not.toEqual(generateServices(7, 2));
  });

  it('checks the targets against the held-out figures', () => {
    const services = [service()];
    const runs = (['coordinated', 'independent', 'static'] as const).map((s) => run(backlog(), s, services));
    const report = {
      format: 'fairway-inference-comparison/1' as const,
      command: 'test',
      commit: 'test',
      trace: { name: 'synthetic', jobs: 200, trainingGpus: 16 },
      window: { start: new Date(T0).toISOString(), tuningDays: 0, heldOutDays: 1, intervalS: 60 },
      knobs: {},
      seeds: [{ seed: 1, services, runs }],
    };
    const checks = checkTargets(report);
    expect(checks.map((c) => c.target)).toEqual([
      'service SLA ≥ 99.5%',
      'GPU allocation ≥ static + 10 points',
      'training p99 wait ≤ static',
      'fewer scale events than independent',
      'no oscillation window',
    ]);
    const [co, , st] = runs.map((x) => x.heldOut);
    expect(checks[2]!.met).toBe(co!.waitP99S <= st!.waitP99S);
    expect(markdownReport(report)).toContain('| coordinated | 1 |');
  });
});

describe('reversals', () => {
  it('counts a change of direction within 10 minutes, not one after, nor two moves the same way', () => {
    const t = new ChangeTracker();
    expect(t.change(0, +1)).toBe(false);
    expect(t.change(5 * 60_000, +2)).toBe(false);
    expect(t.change(15 * 60_000, -1)).toBe(true);
    expect(t.change(26 * 60_000, +1)).toBe(false);
  });
});

describe('the command line', () => {
  it('has defaults for every option and refuses a tuning part as long as the run', () => {
    const a = parseCliArgs([]);
    expect(a).toMatchObject({
      seeds: [1, 2, 3],
      days: 14,
      tuneDays: 2,
      intervalS: 60,
      signal: 'P95_LATENCY_MS',
    });
    expect(() => parseCliArgs(['--days', '2', '--tune-days', '2'])).toThrow(/tune-days/);
    expect(() => parseCliArgs(['--strategies', 'fifo'])).toThrow(/not one of/);
    // The down guard is the core's rule now, not a what-if of the simulator.
    expect(() => parseCliArgs(['--down-guard'])).toThrow(/down-guard/);
  });
});
