// Placement on nodes: MIG slices, time-slice shares, fractional GPUs, dedicated pools,
// best-fit vs fragmentation-aware, and input validation.
import { describe, expect, it } from 'vitest';
import { type JobSpec, SchedulerInputError } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeNode, makeQueue, nodes } from '../builders.js';

const gpuFree = (s: ReturnType<typeof makeCluster>['s'], node: string): number[] =>
  s
    .nodeStatus()
    .find((n) => n.name === node)!
    .gpus.map((g) => g.free);

describe('MIG and time-slice placement', () => {
  it('MIG slices are placed on GPUs that have them, packing the fullest GPU first', () => {
    const { s } = makeCluster({
      nodes: [makeNode('m').flavor('a100-1g').gpus(2)],
      queues: [makeQueue('a').nominal('a100-1g', 14)],
    });
    s.submit(makeJob('j1').queue('a').gpus(3).build());
    s.submit(makeJob('j2').queue('a').gpus(3).build());
    s.cycle();
    expect(gpuFree(s, 'm')).toEqual([1, 7]);
    // 2 slices: 1 from GPU 0 (fullest) then 1 from GPU 1.
    s.submit(makeJob('j3').queue('a').gpus(2).build());
    const [adm] = s.cycle().admitted;
    expect(adm?.podSets[0]?.placements).toEqual([{ node: 'm', pods: 1, gpuIndices: [0, 1] }]);
    expect(gpuFree(s, 'm')).toEqual([0, 6]);
    expect(s.queueStatus('a').resources[0]).toMatchObject({ used: 8 });
    const st = s.nodeStatus()[0]!;
    expect(st).toMatchObject({ kind: 'mig', capacity: { gpu: 14 }, free: { gpu: 6 } });
  });

  it('MIG: more slices than the node has free is NoNodeFits; slices must be whole', () => {
    const { s } = makeCluster({
      nodes: [makeNode('m').flavor('a100-1g').gpus(1)],
      queues: [makeQueue('a').nominal('a100-1g', 14)],
    });
    s.submit(makeJob('j1').queue('a').gpus(5).build());
    s.submit(makeJob('j2').queue('a').gpus(3).build());
    const res = s.cycle();
    expect(res.pending.map((p) => [p.jobId, p.reason])).toEqual([['j2', 'NoNodeFits']]);
    expect(() => s.submit(makeJob('half').queue('a').gpus(0.5).build())).toThrow(/slices must be whole/);
  });

  it('time-slice shares: N shares per GPU', () => {
    const { s } = makeCluster({
      nodes: [makeNode('t').flavor('l4-ts').gpus(2)],
      queues: [makeQueue('a').nominal('l4-ts', 100)],
    });
    for (let i = 0; i < 9; i++) s.submit(makeJob(`s${i}`).queue('a').gpus(1).build());
    const res = s.cycle();
    expect(res.admitted).toHaveLength(8);
    expect(res.pending.map((p) => p.reason)).toEqual(['NoNodeFits']);
    expect(gpuFree(s, 't')).toEqual([0, 0]);
    expect(res.admitted.slice(0, 4).map((a) => a.podSets[0]!.placements[0]!.gpuIndices)).toEqual([
      [0],
      [0],
      [0],
      [0],
    ]);
  });
});

describe('fractional GPUs', () => {
  it('shares pack onto one physical GPU and whole GPUs stay whole', () => {
    const { s } = makeCluster({
      nodes: [makeNode('n').gpus(2)],
      queues: [makeQueue('a').nominal('h100', 2)],
    });
    for (let i = 0; i < 4; i++) s.submit(makeJob(`q${i}`).queue('a').gpus(0.25).build());
    const res = s.cycle();
    expect(res.admitted.map((a) => a.podSets[0]!.placements[0]!.gpuIndices)).toEqual([[0], [0], [0], [0]]);
    expect(gpuFree(s, 'n')).toEqual([0, 1]);
    expect(s.queueStatus('a').resources[0]!.used).toBe(1);
    s.submit(makeJob('whole').queue('a').gpus(1).build());
    expect(s.cycle().admitted[0]!.podSets[0]!.placements[0]!.gpuIndices).toEqual([1]);
  });

  it('a share must fit on one GPU: 0.6 + 0.6 does not share a GPU', () => {
    const { s } = makeCluster({
      nodes: [makeNode('n').gpus(1)],
      queues: [makeQueue('a').nominal('h100', 4)],
    });
    s.submit(makeJob('x').queue('a').gpus(0.6).build());
    s.submit(makeJob('y').queue('a').gpus(0.6).build());
    s.submit(makeJob('z').queue('a').gpus(0.4).build());
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['x', 'z']);
    expect(res.pending.map((p) => [p.jobId, p.reason])).toEqual([['y', 'NoNodeFits']]);
    expect(gpuFree(s, 'n')).toEqual([0]);
  });

  it('no float drift: ten 0.1 shares fill a GPU exactly', () => {
    const { s } = makeCluster({
      nodes: [makeNode('n').gpus(1)],
      queues: [makeQueue('a').nominal('h100', 1)],
    });
    for (let i = 0; i < 11; i++) s.submit(makeJob(`d${i}`).queue('a').gpus(0.1).build());
    const res = s.cycle();
    expect(res.admitted).toHaveLength(10);
    expect(gpuFree(s, 'n')).toEqual([0]);
    expect(s.queueStatus('a').resources[0]!.used).toBe(1);
  });
});

describe('dedicated pools', () => {
  const setup = () =>
    makeCluster({
      nodes: [makeNode('shared').gpus(8), makeNode('ded').gpus(8).pool('p-x').dedicatedTo('t-x')],
      queues: [makeQueue('x').nominal('h100', 16).dedicatedPool('p-x'), makeQueue('y').nominal('h100', 16)],
    });

  it('only the owning tenant lands on a dedicated node; its queue lands only in its pool', () => {
    const { s } = setup();
    s.submit(makeJob('y1').queue('y').gpus(8).build());
    s.submit(makeJob('y2').queue('y').gpus(8).build());
    s.submit(makeJob('x1').queue('x').gpus(8).build());
    s.submit(makeJob('x2').queue('x').gpus(4).build());
    const res = s.cycle();
    const where = Object.fromEntries(res.admitted.map((a) => [a.jobId, a.podSets[0]!.placements[0]!.node]));
    expect(where).toEqual({ y1: 'shared', x1: 'ded' });
    expect(Object.fromEntries(res.pending.map((p) => [p.jobId, p.reason]))).toEqual({
      y2: 'NoNodeFits',
      x2: 'NoNodeFits',
    });
  });
});

describe('placement policy', () => {
  // Node a has 5 GPUs free, node b 4; a 4-GPU shape is pending.
  const setup = (placement: 'best-fit' | 'fragmentation-aware') => {
    const { s } = makeCluster({
      nodes: [makeNode('a').gpus(8), makeNode('b').gpus(8)],
      queues: [makeQueue('f').nominal('h100', 16), makeQueue('z').nominal('h100', 4)],
      options: { placement },
    });
    const fill = (
      id: string,
      node: string,
      gpus: number[],
    ): { job: JobSpec; admission: Parameters<typeof s.restore>[0][number]['admission'] } => ({
      job: makeJob(id).queue('f').gpus(gpus.length).build(),
      admission: {
        jobId: id,
        queue: 'f',
        at: 0,
        borrowed: false,
        mode: 'fit',
        podSets: [
          { name: 'main', flavor: 'h100', count: 1, placements: [{ node, pods: 1, gpuIndices: gpus }] },
        ],
      },
    });
    s.restore([fill('fa', 'a', [0, 1, 2]), fill('fb', 'b', [0, 1, 2, 3])]);
    s.submit(makeJob('wants4').queue('z').gpus(4).pods(2).build()); // pending (exceeds its quota), but its shape counts
    s.cycle();
    s.submit(makeJob('one').queue('f').gpus(1).build());
    return s.cycle().admitted[0]!.podSets[0]!.placements[0]!.node;
  };
  it('best-fit puts a pod on the node it fills most tightly', () => expect(setup('best-fit')).toBe('b'));
  it('fragmentation-aware keeps the 4-GPU hole usable by the pending shape', () =>
    expect(setup('fragmentation-aware')).toBe('a'));
});

describe('input validation', () => {
  const base = () =>
    makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8).nominal('a100-1g', 7)] });
  const cases: { name: string; job: (j: ReturnType<typeof makeJob>) => unknown; code: string }[] = [
    { name: 'unknown queue', job: (j) => j.queue('nope'), code: 'UNKNOWN_QUEUE' },
    {
      name: 'unknown priority class',
      job: (j) => j.queue('a').priority('vip'),
      code: 'UNKNOWN_PRIORITY_CLASS',
    },
    { name: 'unknown flavor', job: (j) => j.queue('a').flavors('tpu'), code: 'UNKNOWN_FLAVOR' },
    {
      name: 'flavor the queue does not declare',
      job: (j) => j.queue('a').flavors('l4-ts'),
      code: 'UNKNOWN_FLAVOR',
    },
    { name: 'negative GPUs', job: (j) => j.queue('a').gpus(-1), code: 'NEGATIVE_QUANTITY' },
    { name: 'negative memory', job: (j) => j.queue('a').memory(-5), code: 'NEGATIVE_QUANTITY' },
    { name: 'larger than any node', job: (j) => j.queue('a').gpus(9), code: 'REQUEST_TOO_LARGE' },
    { name: 'more cpu than any node', job: (j) => j.queue('a').cpu(1_000_000), code: 'REQUEST_TOO_LARGE' },
    { name: '1.5 GPUs', job: (j) => j.queue('a').gpus(1.5), code: 'INVALID_QUANTITY' },
    { name: 'zero pods', job: (j) => j.queue('a').pods(0), code: 'INVALID_QUANTITY' },
    { name: 'minCount above count', job: (j) => j.queue('a').pods(2, 3), code: 'INVALID_QUANTITY' },
    {
      name: 'tenant does not own the queue',
      job: (j) => j.queue('a').tenant('t-other'),
      code: 'TENANT_MISMATCH',
    },
  ];
  it.each(cases)('$name → $code', ({ job, code }) => {
    const { s } = base();
    const b = makeJob();
    job(b);
    let err: unknown;
    try {
      s.submit(b.build());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchedulerInputError);
    expect((err as SchedulerInputError).code).toBe(code);
    expect(s.pendingShapes()).toEqual([]);
  });

  it('duplicate id → DUPLICATE_JOB; finish of an unknown job → UNKNOWN_JOB', () => {
    const { s } = base();
    const j = makeJob('dup').queue('a').build();
    s.submit(j);
    expect(() => s.submit(j)).toThrow(expect.objectContaining({ code: 'DUPLICATE_JOB' }));
    expect(() => s.finish('ghost')).toThrow(expect.objectContaining({ code: 'UNKNOWN_JOB' }));
  });

  it('configuration errors: unknown cohort, cohort cycles, nodes in use', () => {
    const { s } = base();
    expect(() => s.upsertQueue(makeQueue('q').cohort('missing').nominal('h100', 1).build())).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_COHORT' }),
    );
    s.upsertCohort({ name: 'c1' });
    s.upsertCohort({ name: 'c2', parent: 'c1' });
    expect(() => s.upsertCohort({ name: 'c1', parent: 'c2' })).toThrow(
      expect.objectContaining({ code: 'COHORT_CYCLE' }),
    );
    s.submit(makeJob('r').queue('a').gpus(1).build());
    s.cycle();
    expect(() => s.removeNode('h100-0')).toThrow(expect.objectContaining({ code: 'NODE_IN_USE' }));
    s.finish('r');
    s.removeNode('h100-0');
    expect(s.nodeStatus()).toEqual([]);
  });

  it('pendingShapes lists distinct pending pod shapes with counts', () => {
    const { s } = base();
    s.submit(
      makeJob('p1')
        .queue('a')
        .gpus(9 - 1)
        .pods(2)
        .build(),
    );
    s.submit(makeJob('p2').queue('a').gpus(8).pods(2).build());
    s.submit(makeJob('p3').queue('a').gpus(1).flavors('a100-1g').build());
    expect(s.pendingShapes()).toEqual([
      { flavors: ['h100', 'a100-1g'], perPod: { gpu: 8, cpu: 0, memory: 0 }, pods: 4, jobs: 2 },
      { flavors: ['a100-1g'], perPod: { gpu: 1, cpu: 0, memory: 0 }, pods: 1, jobs: 1 },
    ]);
  });
});
