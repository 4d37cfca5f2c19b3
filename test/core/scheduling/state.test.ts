// What-if previews undo themselves exactly; restore rebuilds state without re-deciding.
import { describe, expect, it } from 'vitest';
import type { Admission, JobSpec } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const cluster = () =>
  makeCluster({
    nodes: [...nodes(2), ...nodes(1, 'a100-1g', 2)],
    queues: [
      makeQueue('a')
        .cohort('c')
        .nominal('h100', 8)
        .nominal('a100-1g', 14)
        .reclaim('Any')
        .withinQueue('LowerPriority'),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
    options: { fairSharing: { enabled: true, usageHalfLifeMs: 3_600_000 } },
  });

describe('preview (what-if)', () => {
  it('answers fit / borrow / preempt and leaves the state exactly as it was', () => {
    const { s } = cluster();
    s.submit(makeJob('b-own').queue('b').gpus(8).build());
    s.submit(makeJob('b-borrow').queue('b').gpus(4).build());
    s.submit(makeJob('a-exp').queue('a').gpus(2).priority('experiment').build());
    s.submit(makeJob('mig').queue('a').gpus(3).flavors('a100-1g').build());
    s.cycle();
    s.submit(makeJob('queued').queue('b').gpus(8).build());
    const before = s.debugState();

    const fit = s.preview(makeJob('p-fit').queue('a').gpus(1).flavors('a100-1g').build());
    expect(fit).toMatchObject({
      admissible: true,
      borrowed: false,
      wouldPreempt: [],
      admission: { mode: 'fit' },
    });
    const pre = s.preview(makeJob('p-pre').queue('a').gpus(6).flavors('h100').build());
    expect(pre.admissible).toBe(true);
    expect(pre.admission?.mode).toBe('preempt');
    // a stays within its nominal: it reclaims what b borrowed.
    expect(pre.wouldPreempt.map((p) => [p.victimId, p.reason])).toEqual([['b-borrow', 'reclaim']]);
    const no = s.preview(makeJob('p-no').queue('a').gpus(8).pods(3).build());
    expect(no).toMatchObject({ admissible: false, reason: 'ExceedsMaxQuota' });

    expect(s.debugState()).toEqual(before);

    // The preview agrees with what a real cycle then does.
    s.submit(makeJob('p-pre').queue('a').gpus(6).flavors('h100').build());
    const res = s.cycle();
    expect(res.preempted.map((p) => p.victimId)).toEqual(['b-borrow']);
    expect(res.admitted.find((a) => a.jobId === 'p-pre')?.podSets).toEqual(pre.admission?.podSets);
  });

  it('explain (with its ETA search) also leaves the state untouched', () => {
    const { s } = cluster();
    s.submit(makeJob('r').queue('a').gpus(8).duration(60_000).build());
    s.submit(makeJob('r2').queue('b').gpus(8).duration(120_000).build());
    s.submit(makeJob('w').queue('a').gpus(8).build());
    s.cycle();
    const before = s.debugState();
    expect(s.explain('w').eta).not.toBeNull();
    expect(s.debugState()).toEqual(before);
  });
});

describe('restore', () => {
  it('rebuilds quota usage and node placements from persisted admissions without re-deciding', () => {
    const a = cluster();
    const jobs: JobSpec[] = [
      makeJob('r1').queue('a').gpus(4).build(),
      makeJob('r2').queue('b').gpus(8).pods(1).build(),
      makeJob('r3').queue('b').gpus(2).build(),
      makeJob('r4').queue('a').gpus(2).flavors('a100-1g').pods(2).build(),
      makeJob('frac').queue('a').gpus(0.5).build(),
    ];
    for (const j of jobs) a.s.submit(j);
    const admitted = a.s.cycle().admitted;
    expect(admitted).toHaveLength(jobs.length);
    const persisted = admitted.map((adm) => ({
      job: jobs.find((j) => j.id === adm.jobId)!,
      admission: JSON.parse(JSON.stringify(adm)) as Admission,
    }));

    const b = cluster();
    b.s.restore(persisted);
    expect(b.s.nodeStatus()).toEqual(a.s.nodeStatus());
    for (const q of ['a', 'b']) expect(b.s.queueStatus(q)).toEqual(a.s.queueStatus(q));
    for (const j of jobs) expect(b.s.explain(j.id).admission).toEqual(a.s.explain(j.id).admission);
    // Restore made no decision: an immediate cycle admits nothing and preempts nothing.
    expect(b.s.cycle()).toMatchObject({ admitted: [], preempted: [] });

    // And both make the same next decision.
    const next = makeJob('next').queue('a').gpus(4).build();
    a.s.submit(next);
    b.s.submit(next);
    expect(b.s.cycle()).toEqual(a.s.cycle());
    a.s.finish('r2');
    b.s.finish('r2');
    expect(b.s.nodeStatus()).toEqual(a.s.nodeStatus());
  });

  it('refuses admissions on unknown nodes', () => {
    const { s } = cluster();
    const job = makeJob('x').queue('a').gpus(1).build();
    expect(() =>
      s.restore([
        {
          job,
          admission: {
            jobId: 'x',
            queue: 'a',
            at: 0,
            borrowed: false,
            mode: 'fit',
            podSets: [
              {
                name: 'main',
                flavor: 'h100',
                count: 1,
                placements: [{ node: 'gone', pods: 1, gpuIndices: [0] }],
              },
            ],
          },
        },
      ]),
    ).toThrow(expect.objectContaining({ code: 'UNKNOWN_NODE' }));
  });
});

describe('configuration changes', () => {
  it('a quota change through upsertQueue re-charges running jobs and wakes waiting ones', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 4)] });
    s.submit(makeJob('r').queue('a').gpus(4).build());
    s.submit(makeJob('w').queue('a').gpus(4).build());
    s.cycle();
    expect(s.explain('w').reason).toBe('WaitingForQuota');
    s.upsertQueue(makeQueue('a').nominal('h100', 8).build());
    expect(s.queueStatus('a').resources[0]).toMatchObject({ nominal: 8, used: 4 });
    expect(s.cycle().admitted.map((x) => x.jobId)).toEqual(['w']);
  });

  it('a new node wakes jobs waiting for node capacity', () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 16)] });
    s.submit(makeJob('r').queue('a').gpus(8).build());
    s.submit(makeJob('w').queue('a').gpus(8).build());
    s.cycle();
    expect(s.explain('w').reason).toBe('NoNodeFits');
    s.upsertNode({
      name: 'h100-new',
      pool: 'default',
      flavor: 'h100',
      gpus: 8,
      cpu: 64_000,
      memory: 512_000,
    });
    expect(s.cycle().admitted.map((x) => x.jobId)).toEqual(['w']);
  });

  it('decayed usage history ranks equal-share heads: the queue that used less goes first', () => {
    const { s, clock } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
      options: { fairSharing: { enabled: true, usageHalfLifeMs: 3_600_000 } },
    });
    s.submit(makeJob('a-used').queue('a').gpus(4).build());
    s.cycle();
    clock.advance(1_800_000);
    s.finish('a-used');
    // Both heads are within nominal (share 0); a's history is higher, so b goes first and takes the node.
    s.submit(makeJob('a-next').queue('a').gpus(8).submittedAt(1).build());
    s.submit(makeJob('b-next').queue('b').gpus(8).submittedAt(2).build());
    expect(s.cycle().admitted.map((x) => x.jobId)).toEqual(['b-next']);
  });
});
