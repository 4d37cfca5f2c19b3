// Governance in the replay: idle reclaim per policy action on the virtual clock, probes,
// the controller's adjustments recomputed from what they record, floors kept, the old policies untouched.
import { describe, expect, it } from 'vitest';
import {
  BUILT_IN_POLICIES,
  replayAdjustment,
  utilizationProfile,
  type WorkloadType,
} from '../../src/core/governance/index.js';
import { parseCluster } from '../../src/simulator/cluster.js';
import type { SimInput } from '../../src/simulator/engine.js';
import { computeReplayMetrics } from '../../src/simulator/metrics.js';
import { Prng } from '../../src/simulator/prng.js';
import { parseQueues } from '../../src/simulator/queues.js';
import { type ReplayOptions, runReplay } from '../../src/simulator/replay.js';
import { reportJson } from '../../src/simulator/report.js';
import { type SimulateOptions, simulate } from '../../src/simulator/run.js';
import { parseTrace } from '../../src/simulator/trace.js';

const H = 3_600_000;
const MIN = 60_000;
const policy = (name: string) => BUILT_IN_POLICIES.find((p) => p.name === name)!;

/**
 * gu: guaranteed (NOTIFY), el: elastic (RECLAIM_IF_BORROWING), be: best-effort (RECLAIM; no floor, so
 * nominal 0 as convert-philly writes it); one 8-GPU node.
 */
const QUEUES = JSON.stringify({
  cohorts: [{ name: 'c' }],
  queues: [
    { name: 'gu', tenant: 'G', cohort: 'c', slaClass: 'CRITICAL', quotas: { gpu: { gpu: { nominal: 4 } } } },
    {
      name: 'el',
      tenant: 'E',
      cohort: 'c',
      workloadType: 'TRAINING',
      quotas: { gpu: { gpu: { nominal: 2 } } },
    },
    {
      name: 'be',
      tenant: 'B',
      cohort: 'c',
      slaClass: 'BEST_EFFORT',
      quotas: { gpu: { gpu: { nominal: 0 } } },
    },
  ],
});
const PLAIN_QUEUES = QUEUES.replace(/"(slaClass|workloadType)":"[A-Z_]+",/g, '');
const CLUSTER = 'name,pool,gpu_type,gpus,cpu_milli,memory_mib,count\nn,default,gpu,8,64000,512000,1\n';

function input(rows: string[], queues = QUEUES): SimInput {
  return {
    trace: parseTrace(`${['id,submit_time,duration_s,tenant,gpus,workload_type', ...rows].join('\n')}\n`),
    cluster: parseCluster(CLUSTER),
    queues: parseQueues(queues, 'q.json'),
  };
}

/** Job ids (seed 1) whose profile for `type` over `durationMs` has (or has not) an idle tail. */
function ids(type: WorkloadType, durationMs: number, tail: boolean, n: number, prefix: string): string[] {
  const out: string[] = [];
  for (let k = 0; out.length < n; k++) {
    const id = `${prefix}${k}`;
    if ((utilizationProfile(1, id, type, durationMs).idleAfterMs !== null) === tail) out.push(id);
  }
  return out;
}
const D = 10 * H;
const tailOf = (id: string): number => utilizationProfile(1, id, 'ONLINE_INFERENCE', D).idleAfterMs!;
const gov = (
  o: Partial<NonNullable<ReplayOptions['governance']>> = {},
): NonNullable<ReplayOptions['governance']> => ({ seed: 1, idleReclaim: true, controller: false, ...o });

describe('idle reclaim on the virtual clock, per the queue policy’s action', () => {
  const [g1, b1, e1, e2] = ids('ONLINE_INFERENCE', D, true, 4, 'x');

  it('NOTIFY (guaranteed) flags only; RECLAIM (best-effort) ends the job idleForMs into its idle tail; RECLAIM_IF_BORROWING notifies within nominal', () => {
    const inp = input([
      `${g1},0,36000,G,2,ONLINE_INFERENCE`,
      `${b1},0,36000,B,1,ONLINE_INFERENCE`,
      `${e1},0,36000,E,1,ONLINE_INFERENCE`,
    ]);
    const o = runReplay(inp, {
      policy: 'governed',
      placement: 'best-fit',
      windowEnd: 'last-finish',
      governance: gov(),
    });
    const end = Object.fromEntries(o.jobs.map((j) => [j.id, j.endMs]));
    expect(end[g1!]).toBe(D);
    expect(end[e1!]).toBe(D);
    expect(end[b1!]).toBe(tailOf(b1!) + policy('best-effort').idle.idleForMs);
    const flags = o.governance!.flags.map((f) => [o.jobs[f.job]!.id, f.policy, f.reclaimed, f.at]);
    expect(flags).toEqual(
      expect.arrayContaining([
        [g1, 'guaranteed', false, tailOf(g1!) + policy('guaranteed').idle.idleForMs],
        [b1, 'best-effort', true, tailOf(b1!) + policy('best-effort').idle.idleForMs],
        [e1, 'elastic', false, tailOf(e1!) + policy('elastic').idle.idleForMs],
      ]),
    );
    expect(o.governance!.flags).toHaveLength(3);
    const m = computeReplayMetrics(o).governance!;
    expect(m.idle).toEqual({
      flagged: 3,
      notified: 2,
      reclaimed: 1,
      gpuHoursFreed: expect.closeTo((D - tailOf(b1!) - 15 * MIN) / H, 5),
    });
    expect(m.idleByPolicy['best-effort']!.reclaimed).toBe(1);
  });

  it('RECLAIM_IF_BORROWING reclaims while the queue holds more than its nominal', () => {
    const o = runReplay(input([`${e2},0,36000,E,3,ONLINE_INFERENCE`]), {
      policy: 'governed',
      placement: 'best-fit',
      windowEnd: 'last-finish',
      governance: gov(),
    });
    expect(o.jobs[0]!.endMs).toBe(tailOf(e2!) + policy('elastic').idle.idleForMs);
    expect(o.governance!.idle).toMatchObject({ flagged: 1, reclaimed: 1 });
  });

  it('off: the same jobs run to their end, nothing is flagged', () => {
    const o = runReplay(input([`${b1},0,36000,B,1,ONLINE_INFERENCE`]), {
      policy: 'governed',
      placement: 'best-fit',
      windowEnd: 'last-finish',
      governance: gov({ idleReclaim: false }),
    });
    expect(o.jobs[0]!.endMs).toBe(D);
    expect(o.governance!.flags).toEqual([]);
  });

  it('a job without an idle tail is never flagged', () => {
    const [busy] = ids('ONLINE_INFERENCE', D, false, 1, 'y');
    const o = runReplay(input([`${busy},0,36000,B,1,ONLINE_INFERENCE`]), {
      policy: 'governed',
      placement: 'best-fit',
      windowEnd: 'last-finish',
      governance: gov(),
    });
    expect(o.jobs[0]!.endMs).toBe(D);
    expect(o.governance!.idle.flagged).toBe(0);
  });
});

describe('probes', () => {
  it('utilization = GPUs × time × the profile’s mean over the window / (capacity × window)', () => {
    const [id] = ids('TRAINING', D, false, 1, 'z');
    const o = runReplay(input([`${id},0,36000,E,2,TRAINING`]), {
      policy: 'fairway',
      placement: 'best-fit',
      windowEnd: 'last-finish',
      governance: gov({ idleReclaim: false }),
    });
    const m = computeReplayMetrics(o);
    const busy = utilizationProfile(1, id!, 'TRAINING', D).busy;
    expect(m.allocationRatio).toBeCloseTo(2 / 8, 6);
    expect(m.governance!.utilization).toBeCloseTo((2 * busy) / 8, 5);
    expect(m.governance!.meanUtilizationOfAllocated).toBeCloseTo(busy, 5);
  });
});

/** A seeded random trace of 1–2-GPU jobs of the three tenants, a job every `gapS`/2 s on average, runs up to `maxS`. */
function randomTrace(seed: number, n: number, gapS = 900, maxS = 4 * 3600): string[] {
  const r = new Prng(seed);
  const rows: string[] = [];
  let t = 0;
  for (let k = 0; k < n; k++) {
    t += Math.floor(r.next() * gapS);
    const tenant = ['G', 'E', 'B'][r.int(3)]!;
    rows.push(`j${k},${t},${60 + r.int(maxS)},${tenant},${1 + r.int(2)},`);
  }
  return rows;
}

describe('the controller', () => {
  // light load with bursts: the guaranteed queue sits idle at times (it lends more), the others wait at times
  const inp = input(randomTrace(7, 150, 2400, 3 * 3600));
  const o = runReplay(inp, {
    policy: 'controller',
    placement: 'best-fit',
    windowEnd: 'last-finish',
    governance: gov({ controller: true, controllerSettings: { windowMs: 10 * MIN } }),
  });
  const g = o.governance!;

  it('moves coefficients, and every adjustment is recomputed from the inputs it records', () => {
    expect(g.adjustments.length).toBeGreaterThan(0);
    expect(new Set(g.adjustments.flatMap((a) => a.reasons))).toContain('LEND_IDLE');
    const last = new Map<string, unknown>();
    for (const a of g.adjustments) {
      const p = policy(a.policy);
      expect(replayAdjustment(a, p, g.controllerSettings)).toEqual({ to: a.to, reasons: a.reasons });
      // each starts from the setting the previous one of its queue left (or the policy's base)
      expect(a.from).toEqual(
        last.get(a.queue) ?? { lend: p.lend.base, borrow: p.borrow ? p.borrow.base : null },
      );
      last.set(a.queue, a.to);
      expect(a.to.lend).toBeGreaterThanOrEqual(p.lend.min);
      expect(a.to.lend).toBeLessThanOrEqual(p.lend.max);
    }
    expect(g.finalSettings).toEqual(Object.fromEntries([...last.entries()].sort()));
  });

  it('never takes a queue below its floor: every job that fitted its unused nominal starts within the SLA (governed, controller, seeds 1–3)', () => {
    for (const seed of [1, 2, 3]) {
      for (const p of ['governed', 'controller'] as const) {
        const out = runReplay(input(randomTrace(seed, 150, 1200, 3 * 3600)), {
          policy: p,
          placement: 'best-fit',
          windowEnd: 'last-finish',
          governance: gov({
            seed,
            controller: p === 'controller',
            controllerSettings: { windowMs: 5 * MIN },
          }),
        });
        const sla = computeReplayMetrics(out).sla;
        expect(sla.eligible).toBeGreaterThan(3);
        expect(sla.met, `${p} seed ${seed}`).toBe(sla.eligible);
      }
    }
  });
});

describe('reports', () => {
  const opts = (
    queues: string,
    policies: SimulateOptions['policies'],
    extra: Partial<SimulateOptions> = {},
  ): SimulateOptions => ({
    trace: 't.csv',
    cluster: 'c.csv',
    queues,
    policies,
    placements: ['best-fit'],
    mode: 'replay',
    seed: 1,
    windowEnd: 'last-finish',
    ...extra,
  });
  const rows = randomTrace(11, 80);

  it('the same seed gives the same report; another seed other utilization', () => {
    const a = simulate(opts('q.json', ['governed', 'controller'], { idleReclaim: true }), input(rows)).report;
    const b = simulate(opts('q.json', ['governed', 'controller'], { idleReclaim: true }), input(rows)).report;
    expect(reportJson(a)).toBe(reportJson(b));
    const c = simulate(opts('q.json', ['governed'], { idleReclaim: true, seed: 2 }), input(rows)).report;
    expect(c.mode === 'replay' && a.mode === 'replay' && c.runs[0]!.governance!.utilization).not.toBe(
      a.mode === 'replay' && a.runs[0]!.governance!.utilization,
    );
  });

  it('fairway, static and fifo: no governance block without --probes, and the governance fields change nothing', () => {
    const plain = simulate(opts('q.json', ['fairway', 'static', 'fifo']), input(rows, PLAIN_QUEUES)).report;
    const governed = simulate(opts('q.json', ['fairway', 'static', 'fifo']), input(rows)).report;
    expect(reportJson(governed)).toBe(reportJson(plain));
    expect(reportJson(plain)).not.toContain('"governance"');
    const probed = simulate(opts('q.json', ['fairway'], { probes: true }), input(rows)).report;
    if (probed.mode !== 'replay' || plain.mode !== 'replay') throw new Error('replay');
    const { governance, ...rest } = probed.runs[0]!;
    expect(governance!.utilization).toBeGreaterThan(0);
    expect(rest).toEqual(plain.runs[0]);
  });
});
