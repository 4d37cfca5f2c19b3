// Flavor choice by score: an unpinned pod set goes to the flavor whose placement scores best
// (best-fit or the expected-fragmentation increase), pinned lists keep their order, Kueue's
// flavorFungibility options, CPU-only pods away from free GPUs, and the FGD score itself.
import { describe, expect, it } from 'vitest';
import { fragGroups, fragOf } from '../../../src/core/scheduling/frag-score.js';
import type { QueueSpec, SchedulerOptions } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeNode, makeQueue } from '../builders.js';

const flavorOf = (r: {
  admitted: { podSets: { flavor: string; placements: { node: string }[] }[] }[];
}): string => `${r.admitted[0]!.podSets[0]!.flavor}/${r.admitted[0]!.podSets[0]!.placements[0]!.node}`;

// h100 (declared first) has an empty 8-GPU node; a100 a 2-GPU node with one GPU in use.
function twoFlavors(
  options: Partial<SchedulerOptions> = {},
  queue: (q: ReturnType<typeof makeQueue>) => ReturnType<typeof makeQueue> = (q) => q,
) {
  const { s } = makeCluster({
    nodes: [makeNode('big').flavor('h100').gpus(8), makeNode('small').flavor('a100').gpus(2)],
    queues: [queue(makeQueue('q').nominal('h100', 8).nominal('a100', 2))],
    options,
  });
  s.submit(makeJob('first').queue('q').gpus(1).flavors('a100').build());
  s.cycle();
  return s;
}

describe('flavor choice by score', () => {
  it('an unpinned pod goes to the flavor it fills most tightly, not the first declared', () => {
    const s = twoFlavors();
    s.submit(makeJob('j').queue('q').gpus(1).build());
    expect(flavorOf(s.cycle())).toBe('a100/small');
  });

  it("flavorSelection 'preference-order' keeps the old rule: first declared flavor that fits", () => {
    const s = twoFlavors({ flavorSelection: 'preference-order' });
    s.submit(makeJob('j').queue('q').gpus(1).build());
    expect(flavorOf(s.cycle())).toBe('h100/big');
  });

  it('a pod set that lists its flavors keeps that order', () => {
    const s = twoFlavors();
    s.submit(makeJob('j').queue('q').gpus(1).flavors('h100', 'a100').build());
    expect(flavorOf(s.cycle())).toBe('h100/big');
  });

  it('ties go to declaration order', () => {
    const { s } = makeCluster({
      nodes: [makeNode('x').flavor('h100').gpus(4), makeNode('y').flavor('a100').gpus(4)],
      queues: [makeQueue('q').nominal('a100', 4).nominal('h100', 4)],
    });
    s.submit(makeJob('j').queue('q').gpus(2).build());
    expect(flavorOf(s.cycle())).toBe('a100/y');
  });

  it('CPU-only pods go to nodes without free GPUs', () => {
    const { s } = makeCluster({
      nodes: [makeNode('gpu-node').flavor('h100').gpus(8), makeNode('cpu-node').flavor('a100').gpus(0)],
      queues: [makeQueue('q').nominal('h100', 8).nominal('a100', 0)],
    });
    s.submit(makeJob('c').queue('q').gpus(0).cpu(4000).build());
    expect(flavorOf(s.cycle())).toBe('a100/cpu-node');
  });

  describe('flavorFungibility.whenCanBorrow', () => {
    // q's nominal on a100 is used up (borrowing needed there); h100 still fits, but on a looser node.
    const setup = (fung: QueueSpec['flavorFungibility']) => {
      const { s } = makeCluster({
        nodes: [makeNode('big').flavor('h100').gpus(8), makeNode('small').flavor('a100').gpus(2)],
        queues: [
          {
            ...makeQueue('q').cohort('c').nominal('h100', 8).nominal('a100', 1).build(),
            ...(fung ? { flavorFungibility: fung } : {}),
          },
          makeQueue('lender').cohort('c').nominal('a100', 1).build(),
        ],
      });
      s.submit(makeJob('first').queue('q').gpus(1).flavors('a100').build());
      s.cycle();
      s.submit(makeJob('j').queue('q').gpus(1).build());
      const r = s.cycle();
      return `${flavorOf(r)} borrowed=${r.admitted[0]!.borrowed}`;
    };
    it('TryNextFlavor (default): a flavor that fits within nominal wins over a tighter one that borrows', () =>
      expect(setup(undefined)).toBe('h100/big borrowed=false'));
    it('Borrow: borrowing competes on score', () =>
      expect(setup({ whenCanBorrow: 'Borrow' })).toBe('a100/small borrowed=true'));
  });

  it('whenCanPreempt Preempt: a job that would borrow reclaims within its nominal by preemption instead', () => {
    // a holds its nominal (2) with a low-priority job; b lends 2 idle GPUs; a high-priority job of a arrives
    const run = (whenCanPreempt: 'Preempt' | 'TryNextFlavor') => {
      const { s } = makeCluster({
        nodes: [makeNode('n').flavor('h100').gpus(4)],
        queues: [
          {
            ...makeQueue('a')
              .cohort('c')
              .nominal('h100', 2)
              .preemption({ withinQueue: 'LowerPriority' })
              .build(),
            flavorFungibility: { whenCanPreempt },
          },
          makeQueue('b').cohort('c').nominal('h100', 2).build(),
        ],
      });
      s.submit(makeJob('low').queue('a').gpus(2).priority('experiment').build());
      s.cycle();
      s.submit(makeJob('high').queue('a').gpus(2).priority('training').build());
      const r = s.cycle();
      return `${r.admitted.map((a) => `${a.jobId} borrowed=${a.borrowed}`).join(',')} preempted=${r.preempted.map((p) => p.victimId).join(',')}`;
    };
    expect(run('TryNextFlavor')).toBe('high borrowed=true preempted=');
    expect(run('Preempt')).toBe('high borrowed=false preempted=low');
  });
});

describe('FGD expected fragmentation of a node', () => {
  const shapes = (xs: [number, number, number, number][]) =>
    xs.map(([gpu, cpu, mem, weight]) => ({ gpu, cpu, mem, weight }));
  it('a share cannot use GPUs whose free part is below it; whole GPUs need whole free GPUs', () => {
    const g = fragGroups(
      shapes([
        [500, 0, 0, 0.5],
        [2000, 0, 0, 0.5],
      ]),
    );
    // GPUs free: 300, 1000, 1000 (milli). Share 0.5: the 300 is unusable. 2 GPUs: the partial 300 is
    // unusable.
    expect(fragOf([300, 1000, 1000], 1000, 'gpu', 10, 10, g)).toBeCloseTo(0.5 * 300 + 0.5 * 300);
    // only one whole GPU: the 2-GPU shape can use nothing
    expect(fragOf([300, 1000, 0], 1000, 'gpu', 10, 10, g)).toBeCloseTo(0.5 * 300 + 0.5 * 1300);
  });
  it('a node without the cpu or memory of a shape strands all its free GPU for that shape', () => {
    const g = fragGroups(shapes([[500, 8000, 0, 1]]));
    expect(fragOf([1000, 1000], 1000, 'gpu', 4000, 1 << 20, g)).toBe(2000);
    expect(fragOf([1000, 1000], 1000, 'gpu', 8000, 1 << 20, g)).toBe(0);
  });
  it('fragmentation-aware placement with an expected workload keeps whole GPUs whole', () => {
    // one node with GPU 0 at 0.6 free and GPU 1 whole; a 0.5 share goes on GPU 0 (leaves 0.1 stranded)
    // rather than GPU 1 (0.5 left, still usable by 0.5 shares, but the 1-GPU shapes lose GPU 1)
    const { s } = makeCluster({
      nodes: [makeNode('n').flavor('h100').gpus(2)],
      queues: [makeQueue('q').nominal('h100', 2)],
      options: {
        placement: 'fragmentation-aware',
        workloadShapes: [
          { perPod: { gpu: 1 }, weight: 1 },
          { perPod: { gpu: 0.5 }, weight: 1 },
        ],
      },
    });
    s.submit(makeJob('a').queue('q').gpus(0.4).build());
    s.cycle();
    s.submit(makeJob('b').queue('q').gpus(0.5).build());
    const r = s.cycle();
    expect(r.admitted[0]!.podSets[0]!.placements[0]!.gpuIndices).toEqual([0]);
  });
});
