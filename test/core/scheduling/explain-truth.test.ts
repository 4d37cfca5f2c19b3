// Items 2, 4 and 6 (core half): pending reasons true as of now, NoNodeFits with the free
// blocks, an ETA simulated over the jobs ahead, and no other job's id in any core message.
import { describe, expect, it } from 'vitest';
import { makeCluster, makeJob, makeNode, makeQueue, nodes } from '../builders.js';

const HOUR = 3_600_000;

describe('pending reasons are diagnosed against the current state', () => {
  it('a parked job that was not retried reports the numbers of now, not of when it was parked', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(makeJob('r1').queue('a').gpus(4).build());
    s.submit(makeJob('r2').queue('a').gpus(4).build());
    s.submit(makeJob('big').queue('a').gpus(8).build());
    s.cycle();
    expect(s.explain('big').shortfall).toMatchObject({ requested: 8, available: 0, used: 8 });
    s.finish('r1');
    expect(s.cycle()).toMatchObject({ admitted: [], pending: [] }); // 4 free, big needs 8: not retried
    expect(s.explain('big')).toMatchObject({
      reason: 'WaitingForQuota',
      shortfall: { requested: 8, available: 4, used: 4 },
    });
    expect(s.explain('big').message).toMatch(/available 4/);
  });

  it("a cohort neighbour's new borrowing changes the waiting job's numbers", () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    });
    s.submit(makeJob('a-run').queue('a').gpus(8).build());
    s.submit(makeJob('a-wait').queue('a').gpus(8).pods(2).build()); // within a's max (8 own + 8 lendable), waits
    s.cycle();
    expect(s.explain('a-wait').shortfall).toMatchObject({ available: 8 });
    s.submit(makeJob('b-run').queue('b').gpus(6).build());
    s.cycle();
    expect(s.explain('a-wait').shortfall).toMatchObject({ available: 2, used: 8 });
  });

  it("the cycle's pending list reflects admissions made later in the same cycle", () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
    });
    s.submit(makeJob('b-run').queue('b').gpus(4).build());
    s.cycle();
    // Both heads borrow; a-big has the higher priority so it is tried (and fails) first, then b-small takes
    // 2.
    s.submit(makeJob('a-big').queue('a').gpus(8).priority('production').build());
    s.submit(makeJob('b-small').queue('b').gpus(2).build());
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['b-small']);
    expect(res.pending).toEqual([
      expect.objectContaining({
        jobId: 'a-big',
        reason: 'WaitingForQuota',
        shortfall: expect.objectContaining({ available: 2 }),
      }),
    ]);
    expect(s.explain('a-big').shortfall).toMatchObject({ available: 2 });
  });

  it('NoNodeFits when quota allows but the free GPUs are scattered: the largest free block per flavor', () => {
    const { s } = makeCluster({ nodes: nodes(4), queues: [makeQueue('a').nominal('h100', 32)] });
    for (let i = 0; i < 4; i++) s.submit(makeJob(`r${i}`).queue('a').gpus(6).build());
    s.submit(makeJob('gang').queue('a').gpus(4).pods(2).build());
    const res = s.cycle();
    const fit = [{ flavor: 'h100', largestFreeGpusOnOneNode: 2, freeGpus: 8, podsNeeded: 2, gpusPerPod: 4 }];
    expect(res.pending).toEqual([
      expect.objectContaining({ jobId: 'gang', reason: 'NoNodeFits', nodeFit: fit }),
    ]);
    const e = s.explain('gang');
    expect(e).toMatchObject({ reason: 'NoNodeFits', nodeFit: fit });
    expect(e.shortfall).toBeUndefined();
    expect(s.preview(makeJob('p').queue('a').gpus(4).pods(2).build())).toMatchObject({
      admissible: false,
      reason: 'NoNodeFits',
      nodeFit: fit,
    });
  });

  it('NoFittingNode only when no eligible node exists at all', () => {
    const { s } = makeCluster({
      nodes: [makeNode('n').gpus(8)],
      queues: [makeQueue('a').nominal('h100', 8).dedicatedPool('empty-pool')],
    });
    s.submit(makeJob('w').queue('a').gpus(1).build());
    expect(s.cycle().pending).toEqual([expect.objectContaining({ jobId: 'w', reason: 'NoFittingNode' })]);
    expect(s.explain('w').nodeFit).toBeUndefined();
  });
});

describe('no other job id in core messages: structured fields instead', () => {
  it('a victim knows its preemptor only through preemptedBy; the text names no job', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 4),
      ],
    });
    s.submit(makeJob('victim-b').queue('b').gpus(8).build());
    s.cycle();
    s.submit(makeJob('reclaimer-a').queue('a').gpus(4).build());
    expect(s.cycle().preempted.map((p) => p.victimId)).toEqual(['victim-b']);
    const e = s.explain('victim-b');
    expect(e.preemptedBy).toEqual({ jobId: 'reclaimer-a', reason: 'reclaim' });
    expect(e.message).not.toContain('reclaimer-a');
    // Evaluated again in the next cycle: still structured, still no id in the text.
    const next = s.cycle().pending.find((p) => p.jobId === 'victim-b');
    expect(next).toMatchObject({ preemptedBy: { jobId: 'reclaimer-a', reason: 'reclaim' } });
    expect(next?.message).not.toContain('reclaimer-a');
    // Admitted again: the marker is gone.
    s.finish('reclaimer-a');
    s.cycle();
    expect(s.explain('victim-b')).toMatchObject({ state: 'admitted' });
    expect(s.explain('victim-b').preemptedBy).toBeUndefined();
  });

  it('StrictFIFOBlocked names its head in blockedBy, not in the message', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8).strictFIFO()] });
    s.submit(makeJob('run').queue('a').gpus(4).submittedAt(0).build());
    s.cycle();
    s.submit(makeJob('head-job').queue('a').gpus(8).submittedAt(1).build());
    s.submit(makeJob('behind').queue('a').gpus(1).submittedAt(2).build());
    s.cycle();
    const e = s.explain('behind');
    expect(e).toMatchObject({ reason: 'StrictFIFOBlocked', blockedBy: 'head-job' });
    expect(e.message).not.toContain('head-job');
  });
});

describe('ETA: a forward simulation over the jobs ahead', () => {
  const oneNode = () => makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });

  it('jobs ahead in admission order push the ETA back by their declared durations', () => {
    const { s, clock } = oneNode();
    const t0 = clock.now();
    s.submit(makeJob('run').queue('a').gpus(8).duration(HOUR).build());
    s.cycle();
    for (let i = 1; i <= 3; i++)
      s.submit(makeJob(`w${i}`).queue('a').gpus(8).duration(HOUR).submittedAt(i).build());
    s.cycle();
    expect(['w1', 'w2', 'w3'].map((id) => s.explain(id).eta)).toEqual([
      t0 + HOUR,
      t0 + 2 * HOUR,
      t0 + 3 * HOUR,
    ]);
    expect(s.explain('w3').etaUnknownReason).toBeUndefined();
  });

  it('a job ahead without a declared duration makes the ETA unknown, with the reason', () => {
    const { s, clock } = oneNode();
    s.submit(makeJob('run').queue('a').gpus(8).duration(HOUR).build());
    s.cycle();
    s.submit(makeJob('w1').queue('a').gpus(8).submittedAt(1).build());
    s.submit(makeJob('w2').queue('a').gpus(8).duration(HOUR).submittedAt(2).build());
    s.cycle();
    expect(s.explain('w1').eta).toBe(clock.now() + HOUR);
    expect(s.explain('w2')).toMatchObject({ eta: null, etaUnknownReason: 'NoDeclaredDuration' });
  });

  it('a job that can never fit has no ETA (NeverFits), one beyond the bound has TooFarAhead', () => {
    const { s } = oneNode();
    s.submit(makeJob('huge').queue('a').gpus(8).pods(2).build());
    s.cycle();
    expect(s.explain('huge')).toMatchObject({ eta: null, etaUnknownReason: 'NeverFits' });
    const far = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] }).s;
    for (let i = 0; i < 130; i++)
      far.submit(
        makeJob(`q${String(i).padStart(3, '0')}`)
          .queue('a')
          .gpus(8)
          .duration(60_000)
          .submittedAt(i)
          .build(),
      );
    far.cycle();
    expect(far.explain('q050').eta).not.toBeNull();
    expect(far.explain('q120')).toMatchObject({ eta: null, etaUnknownReason: 'TooFarAhead' });
  });

  it('the simulation leaves the state exactly as it was, and the ETA is stable across unrelated events', () => {
    const { s, clock } = makeCluster({
      nodes: [...nodes(1), ...nodes(1, 'a100')],
      queues: [makeQueue('a').nominal('h100', 8), makeQueue('x').nominal('a100', 8)],
    });
    s.submit(makeJob('run').queue('a').gpus(8).duration(HOUR).build());
    s.submit(makeJob('w').queue('a').gpus(8).duration(HOUR).build());
    s.submit(makeJob('w2').queue('a').gpus(4).pods(2, 1).duration(HOUR).build());
    s.cycle();
    const before = s.debugState();
    const eta = s.explain('w2').eta;
    expect(eta).toBe(clock.now() + 2 * HOUR);
    expect(s.debugState()).toEqual(before);
    clock.advance(60_000);
    s.submit(makeJob('x1').queue('x').gpus(8).build());
    s.cycle();
    s.submit(makeJob('x2').queue('x').gpus(8).build());
    s.cycle();
    expect(s.explain('w2').eta).toBe(eta);
  });

  it('explaining every pending job of a mixed cluster (cohorts, StrictFIFO, gangs, MIG, no durations) changes no state', () => {
    const { s, clock } = makeCluster({
      nodes: [...nodes(3), ...nodes(1, 'a100-1g', 8)],
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).nominal('a100-1g', 28).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 8).strictFIFO(),
        makeQueue('d').cohort('c').nominal('h100', 8),
      ],
    });
    let n = 0;
    for (const q of ['a', 'b', 'd'])
      for (const [gpus, pods, dur] of [
        [8, 1, HOUR],
        [4, 2, undefined],
        [2, 3, 30 * 60_000],
        [8, 2, HOUR],
      ] as const) {
        const j = makeJob(`${q}-${n++}`).queue(q).gpus(gpus).pods(pods).submittedAt(n);
        if (dur !== undefined) j.duration(dur);
        s.submit(j.build());
      }
    s.submit(makeJob('mig').queue('a').gpus(3).pods(4).flavors('a100-1g').duration(HOUR).build());
    s.cycle();
    clock.advance(1000);
    const before = s.debugState();
    const explained = Array.from({ length: n }, (_, i) => ['a', 'b', 'd'].map((q) => `${q}-${i}`))
      .flat()
      .filter((id) => s.jobState(id) === 'pending')
      .map((id) => s.explain(id));
    expect(explained.length).toBeGreaterThan(3);
    expect(s.debugState()).toEqual(before);
    for (const e of explained) expect(e.eta === null ? e.etaUnknownReason : 'known').toBeDefined();
  });
});
