// Queueing: StrictFIFO vs BestEffortFIFO, priority order, gangs, pending reasons, positions, ETA.
import { describe, expect, it } from 'vitest';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

describe('queueing strategies', () => {
  const scenario = (strict: boolean) => {
    const q = makeQueue('a').nominal('h100', 8);
    if (strict) q.strictFIFO();
    const { s } = makeCluster({ nodes: nodes(2), queues: [q] });
    s.submit(makeJob('running').queue('a').gpus(4).build());
    s.cycle();
    s.submit(makeJob('big').queue('a').gpus(8).submittedAt(10).build());
    s.submit(makeJob('small').queue('a').gpus(4).submittedAt(20).build());
    return s;
  };

  it.each([
    { strategy: 'BestEffortFIFO', strict: false, admitted: ['small'], smallReason: undefined },
    { strategy: 'StrictFIFO', strict: true, admitted: [], smallReason: 'StrictFIFOBlocked' },
  ])('$strategy: a head that does not fit $strategy', ({ strict, admitted, smallReason }) => {
    const s = scenario(strict);
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(admitted);
    expect(s.explain('big').reason).toBe('WaitingForQuota');
    if (smallReason) expect(s.explain('small').reason).toBe(smallReason);
    else expect(s.explain('small').state).toBe('admitted');
  });

  it('StrictFIFO: once the head is in, the next one gets its turn', () => {
    const s = scenario(true);
    s.cycle();
    s.finish('running');
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['big']);
    expect(s.explain('small').reason).toBe('WaitingForQuota');
    s.finish('big');
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['small']);
  });

  it('StrictFIFO: a higher-priority job submitted later overtakes the blocked head', () => {
    const s = scenario(true);
    s.cycle();
    s.submit(makeJob('urgent').queue('a').gpus(2).priority('production').submittedAt(30).build());
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['urgent']);
  });

  it('higher priority goes first, then earlier submit, then id', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(makeJob('late-exp').queue('a').gpus(8).priority('experiment').submittedAt(1).build());
    s.submit(makeJob('b-train').queue('a').gpus(8).priority('training').submittedAt(5).build());
    s.submit(makeJob('a-train').queue('a').gpus(8).priority('training').submittedAt(5).build());
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['a-train']);
    expect(s.explain('b-train').positionInQueue).toBe(1);
    expect(s.explain('late-exp').positionInQueue).toBe(2);
  });

  it('cycle() keeps admitting until no head fits, across passes', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 16)] });
    for (let i = 0; i < 5; i++) s.submit(makeJob(`j${i}`).queue('a').gpus(4).build());
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['j0', 'j1', 'j2', 'j3']);
    expect(res.pending.map((p) => [p.jobId, p.reason])).toEqual([['j4', 'WaitingForQuota']]);
  });
});

describe('gangs', () => {
  it('all or nothing: pods that fit only partly are not placed', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 32)] });
    s.submit(makeJob('f1').queue('a').gpus(5).build());
    s.submit(makeJob('f2').queue('a').gpus(5).build());
    s.cycle();
    const before = s.nodeStatus();
    expect(before.map((n) => n.free.gpu)).toEqual([3, 3]);
    s.submit(makeJob('gang').queue('a').gpus(3).pods(3).build());
    const res = s.cycle();
    expect(res.admitted).toEqual([]);
    expect(res.pending[0]).toMatchObject({ jobId: 'gang', reason: 'NoNodeFits' });
    expect(s.nodeStatus()).toEqual(before);
  });

  it('a gang with minCount is admitted with as many pods as fit', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 16)] });
    s.submit(makeJob('f1').queue('a').gpus(4).build());
    s.cycle();
    s.submit(makeJob('elastic').queue('a').gpus(4).pods(4, 2).build());
    const [adm] = s.cycle().admitted;
    expect(adm?.podSets[0]?.count).toBe(3);
    expect(adm?.podSets[0]?.placements.reduce((n, p) => n + p.pods, 0)).toBe(3);
    expect(s.queueStatus('a').resources[0]!.used).toBe(16);
  });

  it('pods of a gang are spread over nodes with their GPU indices', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 16)] });
    s.submit(makeJob('g').queue('a').gpus(4).pods(4).build());
    const [adm] = s.cycle().admitted;
    expect(adm?.podSets[0]?.placements).toEqual([
      { node: 'h100-0', pods: 2, gpuIndices: [0, 1, 2, 3, 4, 5, 6, 7] },
      { node: 'h100-1', pods: 2, gpuIndices: [0, 1, 2, 3, 4, 5, 6, 7] },
    ]);
  });

  it('several pod sets: a CPU launcher and GPU workers are admitted together', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(
      makeJob('mpi')
        .queue('a')
        .gpus(2)
        .pods(4)
        .podSet({ name: 'launcher', count: 1, perPod: { cpu: 2000, memory: 4096 } })
        .build(),
    );
    const [adm] = s.cycle().admitted;
    expect(adm?.podSets.map((p) => [p.name, p.count])).toEqual([
      ['main', 4],
      ['launcher', 1],
    ]);
    expect(adm?.podSets[1]?.placements).toEqual([{ node: 'h100-0', pods: 1 }]);
  });
});

describe('explain: reasons, positions, ETA', () => {
  it('positions in the queue and in the cohort admission order', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
    });
    s.submit(makeJob('fill').queue('b').gpus(8).build());
    s.cycle();
    s.submit(makeJob('a1').queue('a').gpus(2).submittedAt(10).build());
    s.submit(makeJob('a2').queue('a').gpus(2).submittedAt(20).build());
    s.submit(makeJob('b1').queue('b').gpus(2).submittedAt(5).build());
    expect(s.explain('a1')).toMatchObject({ reason: 'NotYetEvaluated', positionInQueue: 1, queuePending: 2 });
    s.cycle();
    const a1 = s.explain('a1');
    const a2 = s.explain('a2');
    const b1 = s.explain('b1');
    expect(a1).toMatchObject({
      state: 'pending',
      reason: 'WaitingForQuota',
      positionInQueue: 1,
      cohortPending: 3,
    });
    expect(a2).toMatchObject({ positionInQueue: 2 });
    // b borrows (it runs 8 on a nominal of 4), so a's jobs, which do not borrow, come first in the cohort.
    expect([a1.positionInCohort, a2.positionInCohort, b1.positionInCohort]).toEqual([1, 2, 3]);
    expect(a1.shortfall).toMatchObject({
      flavor: 'h100',
      resource: 'gpu',
      requested: 2,
      available: 0,
      nominal: 4,
      used: 0,
    });
  });

  it('ETA from running jobs expected end times', () => {
    const { s, clock } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    const t0 = clock.now();
    s.submit(makeJob('r1').queue('a').gpus(4).duration(3_600_000).build());
    s.submit(makeJob('r2').queue('a').gpus(4).duration(7_200_000).build());
    s.cycle();
    s.submit(makeJob('w4').queue('a').gpus(4).duration(3_600_000).build());
    s.submit(makeJob('w8').queue('a').gpus(8).build());
    s.cycle();
    // w4 starts when r1 ends; w8 (behind w4) when r2 and w4 have both ended.
    expect(s.explain('w4').eta).toBe(t0 + 3_600_000);
    expect(s.explain('w8').eta).toBe(t0 + 7_200_000);
    expect(s.explain('r1')).toMatchObject({ state: 'admitted', expectedEnd: t0 + 3_600_000 });
  });

  it('ETA is null when the blocking jobs have no expected end, and for ExceedsMaxQuota', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(makeJob('r').queue('a').gpus(8).build());
    s.submit(makeJob('w').queue('a').gpus(4).build());
    s.submit(makeJob('huge').queue('a').gpus(4).pods(3).build());
    s.cycle();
    expect(s.explain('w').eta).toBeNull();
    expect(s.explain('huge')).toMatchObject({ reason: 'ExceedsMaxQuota', eta: null });
  });

  it('NoNodeFits when quota allows but nodes are full, with the nodes numbers', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 16)] });
    s.submit(makeJob('r').queue('a').gpus(6).build());
    s.submit(makeJob('w').queue('a').gpus(4).build());
    const res = s.cycle();
    expect(res.pending).toEqual([expect.objectContaining({ jobId: 'w', reason: 'NoNodeFits' })]);
    expect(s.explain('w').message).toMatch(/no set of eligible nodes/);
    expect(s.explain('w').nodeFit).toEqual([
      { flavor: 'h100', largestFreeGpusOnOneNode: 2, freeGpus: 2, podsNeeded: 1, gpusPerPod: 4 },
    ]);
  });

  it('a cycle with nothing new to try does no work; a release wakes only its own tree and flavors', () => {
    const { s } = makeCluster({
      nodes: [...nodes(1), ...nodes(1, 'a100')],
      queues: [
        makeQueue('a').cohort('c1').nominal('h100', 8),
        makeQueue('x').cohort('c2').nominal('a100', 8),
      ],
    });
    s.submit(makeJob('a-run').queue('a').gpus(8).build());
    s.submit(makeJob('x-run').queue('x').gpus(8).build());
    s.submit(makeJob('a-wait').queue('a').gpus(8).build());
    s.submit(makeJob('x-wait').queue('x').gpus(8).build());
    expect(
      s
        .cycle()
        .pending.map((p) => p.jobId)
        .sort(),
    ).toEqual(['a-wait', 'x-wait']);
    expect(s.cycle().pending).toEqual([]); // parked: not re-evaluated
    s.finish('x-run');
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['x-wait']);
    expect(res.pending).toEqual([]); // a-wait was not touched by a release in another tree and flavor
  });

  it('a release smaller than what a parked job needs does not re-evaluate it', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(makeJob('r1').queue('a').gpus(4).build());
    s.submit(makeJob('r2').queue('a').gpus(4).build());
    s.submit(makeJob('big').queue('a').gpus(8).build());
    expect(s.cycle().pending.map((p) => p.jobId)).toEqual(['big']);
    s.finish('r1');
    expect(s.cycle()).toMatchObject({ admitted: [], pending: [] }); // 4 free, big needs 8: not retried
    s.finish('r2');
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['big']);
  });
});
