// Preemption: each policy, priority classes, candidate order, minimal victim set, fair sharing.
import { describe, expect, it } from 'vitest';
import type { PreemptionReason } from '../../../src/core/scheduling/index.js';
import { type JobBuilder, makeCluster, makeJob, makeQueue, nodes, type QueueBuilder } from '../builders.js';

interface PreemptCase {
  name: string;
  queues: QueueBuilder[];
  /** Admitted one per cycle, in this order (so later ones are "more recently admitted"). */
  running: JobBuilder[];
  job: JobBuilder;
  fairSharing?: boolean;
  expect:
    | { victims: string[]; reason?: PreemptionReason; mode: 'preempt' | 'preempt-borrow' }
    | { pending: string };
}

const solo = (w: 'Never' | 'LowerPriority' | 'LowerOrNewerEqualPriority') => [
  makeQueue('a').nominal('h100', 8).withinQueue(w),
];
const pair = (reclaim: 'Never' | 'LowerPriority' | 'Any') => [
  makeQueue('a').cohort('c').nominal('h100', 8).reclaim(reclaim),
  makeQueue('b').cohort('c').nominal('h100', 8),
];

const cases: PreemptCase[] = [
  {
    name: 'withinQueue LowerPriority: a training job evicts an experiment',
    queues: solo('LowerPriority'),
    running: [makeJob('exp').queue('a').pods(8).priority('experiment')],
    job: makeJob('train').queue('a').pods(8).priority('training'),
    expect: { victims: ['exp'], reason: 'priority', mode: 'preempt' },
  },
  {
    name: 'withinQueue Never: it waits',
    queues: solo('Never'),
    running: [makeJob('exp').queue('a').pods(8).priority('experiment')],
    job: makeJob('train').queue('a').pods(8).priority('training'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    name: 'withinQueue LowerPriority: equal priority is not evicted',
    queues: solo('LowerPriority'),
    running: [makeJob('t1').queue('a').pods(8).priority('training').submittedAt(5000)],
    job: makeJob('t0').queue('a').pods(8).priority('training').submittedAt(1000),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    name: 'withinQueue LowerOrNewerEqualPriority: an older job evicts a newer one of equal priority',
    queues: solo('LowerOrNewerEqualPriority'),
    running: [makeJob('newer').queue('a').pods(8).priority('training').submittedAt(5000)],
    job: makeJob('older').queue('a').pods(8).priority('training').submittedAt(1000),
    expect: { victims: ['newer'], reason: 'priority', mode: 'preempt' },
  },
  {
    name: 'withinQueue LowerOrNewerEqualPriority: a newer job does not evict an older one',
    queues: solo('LowerOrNewerEqualPriority'),
    running: [makeJob('older').queue('a').pods(8).priority('training').submittedAt(1000)],
    job: makeJob('newer').queue('a').pods(8).priority('training').submittedAt(5000),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    // Not by priority in its queue; but the nominal's room for jobs that are never preempted is only lent
    // to it: such a job of its queue takes it back as a reclaim (core guaranteed.ts; a higher-priority
    // preemptible job does not: test/core/scheduling/guaranteed-within-nominal.test.ts).
    name: 'production is preemptible only by reclaim: in its queue, by a job that is never preempted taking back the nominal',
    queues: solo('LowerPriority'),
    running: [makeJob('prod').queue('a').pods(8).priority('production')],
    job: makeJob('serve').queue('a').pods(8).priority('inference-critical'),
    expect: { victims: ['prod'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'reclaimWithinCohort Any: the lender takes back its nominal from a higher-priority borrower',
    queues: pair('Any'),
    running: [
      makeJob('b8').queue('b').pods(8).priority('production'),
      makeJob('b-borrow').queue('b').pods(8).priority('production'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('experiment'),
    expect: { victims: ['b-borrow'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'reclaimWithinCohort LowerPriority: a higher-priority borrower stays',
    queues: pair('LowerPriority'),
    running: [
      makeJob('b8').queue('b').pods(8).priority('training'),
      makeJob('b-borrow').queue('b').pods(8).priority('training'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('experiment'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    name: 'reclaimWithinCohort LowerPriority: a lower-priority borrower goes',
    queues: pair('LowerPriority'),
    running: [
      makeJob('b8').queue('b').pods(8).priority('training'),
      makeJob('b-borrow').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('training'),
    expect: { victims: ['b-borrow'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'reclaimWithinCohort Never: it waits',
    queues: pair('Never'),
    running: [
      makeJob('b8').queue('b').pods(8).priority('experiment'),
      makeJob('b-borrow').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('training'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    // It could never be reclaimed, so it never borrows a's idle nominal
    // (test/core/scheduling/floor-unpreemptible.test.ts:
    // one above its nominal after a quota cut is still never a reclaim victim).
    name: 'inference-critical is never preempted, so it does not borrow: beyond its nominal it waits',
    queues: pair('Any'),
    running: [makeJob('serve0').queue('b').pods(8).priority('inference-critical')],
    job: makeJob('serve').queue('b').pods(8).priority('inference-critical'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    // b's job stays; a's job that is never preempted takes its own queue's preemptible job instead (its
    // nominal is judged against a's never-preempted usage, 0: core guaranteed.ts).
    name: 'a queue within its nominal is never a reclaim victim',
    queues: pair('Any'),
    running: [
      makeJob('a-own').queue('a').pods(8).priority('training'),
      makeJob('b-own').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a-more').queue('a').pods(4).priority('inference-critical'),
    expect: { victims: ['a-own'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'candidate order: another queue before the own queue, even at higher priority',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any').withinQueue('LowerPriority'),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('a-exp').queue('a').pods(4).priority('experiment'),
      makeJob('b-own').queue('b').pods(8).priority('training'),
      makeJob('b-borrow').queue('b').pods(4).priority('training'),
    ],
    job: makeJob('a4').queue('a').pods(4).priority('training'),
    expect: { victims: ['b-borrow'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'candidate order: lower priority first',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 0),
    ],
    running: [
      makeJob('b-exp').queue('b').pods(4).priority('experiment'),
      makeJob('b-train').queue('b').pods(4).priority('training'),
    ],
    job: makeJob('a4').queue('a').pods(4).priority('training'),
    expect: { victims: ['b-exp'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'candidate order: most recently admitted first',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 0),
    ],
    running: [
      makeJob('b-first').queue('b').pods(4).priority('training'),
      makeJob('b-second').queue('b').pods(4).priority('training'),
    ],
    job: makeJob('a4').queue('a').pods(4).priority('training'),
    expect: { victims: ['b-second'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'minimal set: a victim taken early but not needed is put back',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 2),
    ],
    running: [
      makeJob('a-own').queue('a').pods(2).priority('training'),
      makeJob('b-t0').queue('b').pods(2).priority('training'),
      makeJob('b-exp').queue('b').pods(2).priority('experiment'),
      makeJob('b-t4').queue('b').pods(4).priority('training'),
    ],
    job: makeJob('a4').queue('a').pods(4).priority('training'),
    expect: { victims: ['b-t4'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'minimal set: several victims when one is not enough',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 0),
    ],
    running: [
      makeJob('b1').queue('b').pods(2).priority('training'),
      makeJob('b2').queue('b').pods(2).priority('training'),
      makeJob('b3').queue('b').pods(2).priority('training'),
    ],
    job: makeJob('a6').queue('a').pods(6).priority('training'),
    expect: { victims: ['b2', 'b3'], reason: 'reclaim', mode: 'preempt' },
  },
  {
    name: 'borrowWithinCohort Never: a job that would borrow after reclaiming waits',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 4),
      makeQueue('l').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('b4').queue('b').pods(4).priority('experiment'),
      makeJob('b8').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('training'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    name: 'borrowWithinCohort LowerPriority: preempt and borrow',
    queues: [
      makeQueue('a')
        .cohort('c')
        .nominal('h100', 4)
        .preemption({ reclaimWithinCohort: 'Any', borrowWithinCohort: { policy: 'LowerPriority' } }),
      makeQueue('b').cohort('c').nominal('h100', 4),
      makeQueue('l').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('b4').queue('b').pods(4).priority('experiment'),
      makeJob('b8').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('training'),
    expect: { victims: ['b8'], reason: 'reclaim', mode: 'preempt-borrow' },
  },
  {
    name: 'borrowWithinCohort: maxPriorityThreshold protects victims above it',
    queues: [
      makeQueue('a')
        .cohort('c')
        .nominal('h100', 4)
        .preemption({
          reclaimWithinCohort: 'Any',
          borrowWithinCohort: { policy: 'LowerPriority', maxPriorityThreshold: 5 },
        }),
      makeQueue('b').cohort('c').nominal('h100', 4),
      makeQueue('l').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('b4').queue('b').pods(4).priority('experiment'),
      makeJob('b8').queue('b').pods(8).priority('experiment'),
    ],
    job: makeJob('a8').queue('a').pods(8).priority('training'),
    expect: { pending: 'WaitingForQuota' },
  },
  {
    name: 'fair sharing: the lower share may take from the higher share',
    fairSharing: true,
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 4).reclaim('Any'),
      makeQueue('l').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('a4').queue('a').pods(4),
      makeJob('a-b1').queue('a').pods(2),
      makeJob('a-b2').queue('a').pods(2),
      makeJob('a-b3').queue('a').pods(2),
      makeJob('b4').queue('b').pods(4),
      makeJob('b-b1').queue('b').pods(2),
    ],
    job: makeJob('b-b2').queue('b').pods(2),
    expect: { victims: ['a-b3'], reason: 'fair-share', mode: 'preempt-borrow' },
  },
  {
    name: 'fair sharing: no preemption that would leave the preemptor above the victim',
    fairSharing: true,
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 4).reclaim('Any'),
      makeQueue('l').cohort('c').nominal('h100', 8),
    ],
    running: [
      makeJob('a4').queue('a').pods(4),
      makeJob('a-b').queue('a').pods(4),
      makeJob('b4').queue('b').pods(4),
      makeJob('b-b').queue('b').pods(2),
    ],
    job: makeJob('b-b2').queue('b').pods(4),
    expect: { pending: 'WaitingForQuota' },
  },
];

describe('preemption', () => {
  it.each(cases)('$name', (c) => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: c.queues,
      options: { fairSharing: { enabled: c.fairSharing ?? false } },
    });
    for (const r of c.running) {
      const spec = r.build();
      s.submit(spec);
      expect(s.cycle().admitted.map((a) => a.jobId)).toEqual([spec.id]);
    }
    const job = c.job.build();
    s.submit(job);
    const res = s.cycle();
    if ('pending' in c.expect) {
      expect(res.preempted).toEqual([]);
      expect(res.admitted).toEqual([]);
      expect(res.pending.find((p) => p.jobId === job.id)?.reason).toBe(c.expect.pending);
      return;
    }
    expect(res.preempted.map((p) => p.victimId).sort()).toEqual([...c.expect.victims].sort());
    for (const p of res.preempted) {
      expect(p.preemptorId).toBe(job.id);
      if (c.expect.reason) expect(p.reason).toBe(c.expect.reason);
    }
    expect(res.admitted.map((a) => [a.jobId, a.mode])).toEqual([[job.id, c.expect.mode]]);
    // Victims are pending again with their original submit time and know who preempted them.
    for (const v of c.expect.victims) {
      const e = s.explain(v);
      expect(e.state).toBe('pending');
      expect(e.preemptions).toBe(1);
      expect(e.lastPreemption?.preemptorId).toBe(job.id);
    }
  });

  it('fair sharing: the victim does not take its capacity back in later cycles (no ping-pong)', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 4).reclaim('Any'),
        makeQueue('l').cohort('c').nominal('h100', 8),
      ],
      options: { fairSharing: { enabled: true } },
    });
    const setup = [
      makeJob('a4').queue('a').pods(4),
      makeJob('a2x').queue('a').pods(2),
      makeJob('a2y').queue('a').pods(2),
      makeJob('a2z').queue('a').pods(2),
    ];
    for (const j of [...setup, makeJob('b4').queue('b').pods(4), makeJob('b2').queue('b').pods(2)]) {
      s.submit(j.build());
      s.cycle();
    }
    s.submit(makeJob('b-more').queue('b').pods(2).build());
    const first = s.cycle();
    expect(first.preempted.map((p) => [p.victimId, p.reason])).toEqual([['a2z', 'fair-share']]);
    // a2z is back in its queue; taking its GPUs back would leave a (6 borrowed) above b (2 borrowed left).
    for (let i = 0; i < 5; i++) expect(s.cycle().preempted).toEqual([]);
    expect(s.explain('a2z').state).toBe('pending');
    expect(s.explain('b-more').state).toBe('admitted');
  });

  it('a victim preempted in a cycle is not re-admitted in that same cycle', () => {
    const { s } = makeCluster({ nodes: nodes(2), queues: pair('Any') });
    s.submit(makeJob('b8').queue('b').pods(8).build());
    s.submit(makeJob('b-borrow').queue('b').pods(4).build());
    s.cycle();
    s.submit(makeJob('a8').queue('a').pods(8).build());
    const res = s.cycle();
    expect(res.preempted.map((p) => p.victimId)).toEqual(['b-borrow']);
    expect(res.admitted.map((a) => a.jobId)).toEqual(['a8']);
    expect(s.explain('b-borrow').state).toBe('pending');
  });
});
