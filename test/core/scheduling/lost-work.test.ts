// Victims chosen by the work they lose (preemption/lost-work.ts): checkpoint-aware candidate order,
// the cost-first walk-back, minRunBeforeReclaimMs, Preemption.lostGpuMs and the input checks.
import { describe, expect, it } from 'vitest';
import { type CheckpointSpec, SchedulerInputError } from '../../../src/core/scheduling/index.js';
import { type JobBuilder, makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const MIN = 60_000;

function withCheckpoint(j: JobBuilder, cp: CheckpointSpec) {
  const spec = j.build();
  spec.checkpoint = cp;
  return spec;
}

/** a (reclaims Any) and b in one cohort; b runs its nominal and borrows a's. Each entry: [job, minutes after
 * start].
 */
function lenderAndBorrower(opts: { nodes: number; gpusPerNode: number; minRunMs?: number }) {
  const b = makeQueue('b').cohort('c').nominal('h100', 8);
  if (opts.minRunMs !== undefined) b.preemption({ minRunBeforeReclaimMs: opts.minRunMs });
  const { s, clock } = makeCluster({
    nodes: nodes(opts.nodes, 'h100', opts.gpusPerNode),
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      b,
      makeQueue('d').cohort('c').nominal('h100', 8),
    ],
  });
  const t0 = clock.t;
  const run = (jobs: [ReturnType<JobBuilder['build']>, number][]) => {
    for (const [spec, at] of jobs) {
      clock.t = t0 + at * MIN;
      s.submit(spec);
      expect(s.cycle().admitted.map((a) => a.jobId)).toEqual([spec.id]);
    }
  };
  return { s, clock, t0, run };
}

describe('victims chosen by the work they lose', () => {
  it('takes the borrower that checkpointed most recently, not the most recently admitted', () => {
    const { s, clock, t0, run } = lenderAndBorrower({ nodes: 2, gpusPerNode: 8 });
    run([
      [makeJob('b-nom').queue('b').gpus(8).build(), 0],
      [withCheckpoint(makeJob('b-ckpt').queue('b').gpus(4), { intervalMs: 60 * MIN }), 0],
      [makeJob('b-new').queue('b').gpus(4).build(), 60],
    ]);
    clock.t = t0 + 125 * MIN; // b-ckpt checkpointed 5 min ago; b-new has run 65 min
    expect(
      s.preview(makeJob('a4').queue('a').gpus(4).build()).wouldPreempt.map((p) => [p.victimId, p.lostGpuMs]),
    ).toEqual([['b-ckpt', 4 * 5 * MIN]]);
    s.submit(makeJob('a4').queue('a').gpus(4).build());
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.reason, p.lostGpuMs])).toEqual([
      ['b-ckpt', 'reclaim', 4 * 5 * MIN],
    ]);
    expect(r.admitted.map((a) => a.jobId)).toEqual(['a4']);
  });

  it('without checkpoints keeps Kueue order (most recently admitted) and reports all its run as lost', () => {
    const { s, clock, t0, run } = lenderAndBorrower({ nodes: 2, gpusPerNode: 8 });
    run([
      [makeJob('b-nom').queue('b').gpus(8).build(), 0],
      [makeJob('b-old').queue('b').gpus(4).build(), 0],
      [makeJob('b-new').queue('b').gpus(4).build(), 60],
    ]);
    clock.t = t0 + 125 * MIN;
    s.submit(makeJob('a4').queue('a').gpus(4).build());
    expect(s.cycle().preempted.map((p) => [p.victimId, p.lostGpuMs])).toEqual([['b-new', 4 * 65 * MIN]]);
  });

  it('a small preemptor weighs a victim by its whole loss: an older 1-GPU job before a young 7-GPU one', () => {
    const { s, clock, t0, run } = lenderAndBorrower({ nodes: 3, gpusPerNode: 8 });
    run([
      [makeJob('b-nom').queue('b').gpus(8).build(), 0],
      [makeJob('b-old').queue('b').gpus(1).build(), 0],
      [makeJob('d-8').queue('d').gpus(8).build(), 0],
      [makeJob('b-young').queue('b').gpus(7).build(), 50],
    ]);
    clock.t = t0 + 60 * MIN; // b-old would lose 1 × 60 GPU-min, b-young 7 × 10
    s.submit(makeJob('a1').queue('a').gpus(1).build());
    expect(s.cycle().preempted.map((p) => [p.victimId, p.lostGpuMs])).toEqual([['b-old', 60 * MIN]]);
    // a preemptor asking for 7 GPUs or more ranks them per GPU: the young one goes
    clock.t = t0 + 61 * MIN;
    s.submit(makeJob('a7').queue('a').gpus(7).build());
    expect(s.cycle().preempted.map((p) => p.victimId)).toEqual(['b-young']);
  });

  it('a resumable job loses nothing and goes first', () => {
    const { s, clock, t0, run } = lenderAndBorrower({ nodes: 2, gpusPerNode: 8 });
    run([
      [makeJob('b-nom').queue('b').gpus(8).build(), 0],
      [withCheckpoint(makeJob('b-res').queue('b').gpus(4), { resumable: true }), 0],
      [makeJob('b-new').queue('b').gpus(4).build(), 60],
    ]);
    clock.t = t0 + 125 * MIN;
    s.submit(makeJob('a4').queue('a').gpus(4).build());
    expect(s.cycle().preempted.map((p) => [p.victimId, p.lostGpuMs])).toEqual([['b-res', 0]]);
  });

  it('the walk-back puts back the most expensive victim first, keeping the cheaper minimal set', () => {
    // One 16-GPU node. b borrows x3 (4 GPUs, 80 min), x2 (1 GPU, 70 min), x1 (3 GPUs, 60 min).
    // a needs 5: taking x1, x2, x3 in order fits; Kueue's backwards walk would keep {x3, x1}
    // (320 + 180 GPU-min); putting back the dearest first keeps {x3, x2} (320 + 70).
    const { s, clock, t0, run } = lenderAndBorrower({ nodes: 1, gpusPerNode: 16 });
    run([
      [makeJob('b-nom').queue('b').gpus(8).build(), 0],
      [makeJob('x3').queue('b').gpus(4).build(), 10],
      [makeJob('x2').queue('b').gpus(1).build(), 20],
      [makeJob('x1').queue('b').gpus(3).build(), 30],
    ]);
    clock.t = t0 + 90 * MIN;
    s.submit(makeJob('a5').queue('a').gpus(5).build());
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.lostGpuMs]).sort()).toEqual([
      ['x2', 70 * MIN],
      ['x3', 4 * 80 * MIN],
    ]);
  });

  it('minRunBeforeReclaimMs keeps a young borrower; once it has aged, the next release retries the lender', () => {
    const { s, clock, t0 } = lenderWaitsForYoungBorrower(120 * MIN);
    const first = s.cycle();
    expect(first.preempted).toEqual([]);
    expect(s.explain('a8').reason).toBe('WaitingForQuota');
    const probe = makeJob('probe').queue('a').gpus(8).build();
    expect(s.preview(probe).admissible).toBe(false);
    clock.t = t0 + 130 * MIN;
    expect(s.preview(probe).admission?.mode).toBe('preempt');
    s.finish('d-small'); // any release in the tree retries the waiting lender
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.reason, p.lostGpuMs])).toEqual([
      ['b-bor', 'reclaim', 8 * 130 * MIN],
    ]);
    expect(r.admitted.map((a) => a.jobId)).toEqual(['a8']);
  });

  it('without minRunBeforeReclaimMs the same young borrower is reclaimed at once', () => {
    const { s } = lenderWaitsForYoungBorrower();
    expect(s.cycle().preempted.map((p) => p.victimId)).toEqual(['b-bor']);
  });

  it('minRunBeforeReclaimMs does not shield a job from priority preemption in its own queue', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [
        makeQueue('a')
          .nominal('h100', 8)
          .preemption({ withinQueue: 'LowerPriority', minRunBeforeReclaimMs: 3_600_000 }),
      ],
    });
    s.submit(makeJob('exp').queue('a').gpus(8).priority('experiment').build());
    s.cycle();
    s.submit(makeJob('train').queue('a').gpus(8).priority('training').build());
    expect(s.cycle().preempted.map((p) => [p.victimId, p.reason, p.lostGpuMs])).toEqual([
      ['exp', 'priority', 0],
    ]);
  });

  it('rejects bad checkpoint and minimum-run values with INVALID_SPEC', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    const bad: unknown[] = [
      { intervalMs: 0 },
      { intervalMs: -5 },
      { intervalMs: Number.NaN },
      { resumable: 'yes' },
      'hourly',
      null,
    ];
    for (const cp of bad) {
      const spec = makeJob('j').queue('a').gpus(1).build();
      (spec as { checkpoint?: unknown }).checkpoint = cp;
      expect(() => s.submit(spec)).toThrow(SchedulerInputError);
      try {
        s.submit(spec);
      } catch (e) {
        expect((e as SchedulerInputError).code).toBe('INVALID_SPEC');
      }
    }
    for (const v of [-1, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() =>
        s.upsertQueue({
          ...makeQueue('q').nominal('h100', 1).build(),
          preemption: { minRunBeforeReclaimMs: v },
        }),
      ).toThrow(/minRunBeforeReclaimMs/);
    }
    for (const v of [-1, Number.NaN]) {
      expect(() =>
        s.upsertQueue({
          ...makeQueue('q').nominal('h100', 1).build(),
          preemption: { fairShareMaxLostRunMs: v },
        }),
      ).toThrow(/fairShareMaxLostRunMs/);
    }
    s.submit(withCheckpoint(makeJob('ok').queue('a').gpus(1), { intervalMs: 1000, resumable: false }));
  });

  describe('fairShareMaxLostRunMs', () => {
    // 16 GPUs; a and b nominal 4, d nominal 8 (idle, lends). b runs 4 + borrows 8 (two 4-GPU jobs, 120
    // and 60 min old at the test). A 4-GPU job of a: borrowing, so it can only win by fair share.
    function setup(maxMin: number | undefined, aRunning: boolean, ckpt?: CheckpointSpec) {
      const b = makeQueue('b').cohort('c').nominal('h100', 4);
      if (maxMin !== undefined) b.preemption({ fairShareMaxLostRunMs: maxMin * MIN });
      const { s, clock } = makeCluster({
        nodes: nodes(2),
        queues: [
          makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
          b,
          makeQueue('d').cohort('c').nominal('h100', 8),
        ],
        options: { fairSharing: { enabled: true } },
      });
      const t0 = clock.t;
      const jobs: [ReturnType<JobBuilder['build']>, number][] = [
        [makeJob('b-nom').queue('b').gpus(4).build(), 0],
        [
          ckpt
            ? withCheckpoint(makeJob('b-bor1').queue('b').gpus(4), ckpt)
            : makeJob('b-bor1').queue('b').gpus(4).build(),
          0,
        ],
        [makeJob('b-bor2').queue('b').gpus(4).build(), 60],
      ];
      if (aRunning) jobs.push([makeJob('a-nom').queue('a').gpus(4).build(), 60]);
      else jobs.push([makeJob('d-4').queue('d').gpus(4).build(), 60]);
      for (const [spec, at] of jobs) {
        clock.t = t0 + at * MIN;
        s.submit(spec);
        expect(s.cycle().admitted.map((x) => x.jobId)).toEqual([spec.id]);
      }
      clock.t = t0 + 120 * MIN;
      s.submit(makeJob('a-x').queue('a').gpus(4).build());
      return s.cycle();
    }

    it('without a limit the borrowing preemptor wins by share against the youngest borrower', () => {
      expect(setup(undefined, true).preempted.map((p) => [p.victimId, p.reason])).toEqual([
        ['b-bor2', 'fair-share'],
      ]);
    });

    it('a victim that would lose more than the limit is not taken by fair share', () => {
      expect(setup(90, true).preempted.map((p) => p.victimId)).toEqual(['b-bor2']);
      expect(setup(30, true).preempted).toEqual([]);
    });

    it('a job that checkpointed recently is within the limit again', () => {
      // b-bor1 checkpoints every 50 min: at 120 min it would lose 20 (b-bor2 would lose 60).
      expect(
        setup(30, true, { intervalMs: 50 * MIN }).preempted.map((p) => [p.victimId, p.lostGpuMs]),
      ).toEqual([['b-bor1', 4 * 20 * MIN]]);
    });

    it('does not limit a reclaim (the preemptor stays within its nominal)', () => {
      expect(setup(0, false).preempted.map((p) => [p.victimId, p.reason])).toEqual([['b-bor2', 'reclaim']]);
    });
  });
});

/**
 * b runs its nominal and borrows 8 more (b-bor), d runs two small jobs; an hour later lender a
 * asks for its 8 GPUs back (a8 submitted, not yet cycled).
 */
function lenderWaitsForYoungBorrower(minRunMs?: number): ReturnType<typeof lenderAndBorrower> {
  const env = lenderAndBorrower({
    nodes: 3,
    gpusPerNode: 8,
    ...(minRunMs !== undefined ? { minRunMs } : {}),
  });
  env.run([
    [makeJob('b-nom').queue('b').gpus(8).build(), 0],
    [makeJob('b-bor').queue('b').gpus(8).build(), 0],
    [makeJob('d-small').queue('d').gpus(1).build(), 0],
    [makeJob('d-big').queue('d').gpus(6).build(), 0],
  ]);
  env.clock.t = env.t0 + 60 * MIN;
  env.s.submit(makeJob('a8').queue('a').gpus(8).build());
  return env;
}
