// Parking and wake-ups (src/core/scheduling/queueing.ts, src/core/scheduling/wake.ts), called directly: why
// a job is
// parked decides what wakes it; a release wakes only those whose need it meets.
import { describe, expect, it } from 'vitest';
import type { Fail } from '../../../src/core/scheduling/assignment/plan.js';
import { upsertNode } from '../../../src/core/scheduling/configure.js';
import { cycle } from '../../../src/core/scheduling/cycle.js';
import { buildJob, finish, submit } from '../../../src/core/scheduling/jobs.js';
import {
  classifyPark,
  knownPreemptFail,
  rememberPreemptFail,
} from '../../../src/core/scheduling/queueing.js';
import { needMet } from '../../../src/core/scheduling/wake.js';
import { makeJob, makeNode, makeQueue, nodes } from '../builders.js';
import { admit, jobOf, makeCore, queueOf } from '../core-builders.js';

const fail = (reason: Fail['reason']): Fail => ({ ok: false, reason, message: '', waitFlavors: [] });

describe('why a job is parked', () => {
  const core = () => makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] }).core;

  it('node reasons wait on nodes, never-fits reasons on configuration, no reason on anything', () => {
    const c = core();
    const j = buildJob(c, makeJob().queue('a').gpus(1).build());
    classifyPark(j, fail('NoNodeFits'));
    expect(j.parkKind).toBe('node');
    classifyPark(j, fail('NoFittingNode'));
    expect(j.parkKind).toBe('node');
    classifyPark(j, fail('ExceedsMaxQuota'));
    expect(j.parkKind).toBe('never');
    classifyPark(j, fail('WindowClosed'));
    expect(j.parkKind).toBe('never');
    classifyPark(j, null);
    expect(j.parkKind).toBe('any');
  });

  it('a quota wait records the available quota a retry needs: the gang minimum minus what its candidates could release', () => {
    const c = core();
    admit(c, makeJob('r').queue('a').gpus(8));
    const j = buildJob(c, makeJob('j').queue('a').gpus(2).pods(3, 2).build());
    j.releasable = new Map([['h100', [1000, 0, 0]]]);
    classifyPark(j, fail('WaitingForQuota'));
    expect(j.parkKind).toBe('quota');
    expect(j.parkNeeds).toEqual([
      { flavor: 'h100', need: [3000, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY] },
    ]);
    expect(needMet(j, new Map())).toBe(false); // available 0 < 3
  });
});

describe('wake-ups', () => {
  it('a release wakes the quota waiters whose need it meets, and only those', () => {
    const { core } = makeCore({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 8)] });
    admit(core, makeJob('r1').queue('a').gpus(4), makeJob('r2').queue('a').gpus(4));
    const res = admit(
      core,
      makeJob('small').queue('a').gpus(4).submittedAt(1),
      makeJob('big').queue('a').gpus(8).submittedAt(2),
    );
    expect(res.pending.map((p) => p.reason)).toEqual(['WaitingForQuota', 'WaitingForQuota']);
    const a = queueOf(core, 'a');
    expect([...a.parked].map((j) => j.spec.id).sort()).toEqual(['big', 'small']);
    expect(core.active.has(a)).toBe(false);
    finish(core, 'r1'); // frees 4: enough for small, not for big
    expect([...a.parked].map((j) => j.spec.id)).toEqual(['big']);
    expect(a.heap.peek()?.spec.id).toBe('small');
    expect(core.active.has(a)).toBe(true);
    expect(cycle(core).admitted.map((x) => x.jobId)).toEqual(['small']);
  });

  it('a job parked for want of nodes wakes when a node it fits is added', () => {
    const { core } = makeCore({
      nodes: [makeNode('n0').gpus(2)],
      queues: [makeQueue('a').nominal('h100', 16)],
    });
    const res = admit(core, makeJob('j').queue('a').gpus(2).pods(2));
    expect(res.pending[0]?.reason).toBe('NoNodeFits');
    expect(jobOf(core, 'j').parkKind).toBe('node');
    expect(core.flavorWaiters.get('h100')?.has(queueOf(core, 'a'))).toBe(true);
    upsertNode(core, makeNode('n1').gpus(1).build()); // too small for a pod: it stays parked
    expect(jobOf(core, 'j').parked).toBe(true);
    upsertNode(core, makeNode('n2').gpus(8).build());
    expect(jobOf(core, 'j').parked).toBe(false);
    expect(cycle(core).admitted.map((x) => x.jobId)).toEqual(['j']);
  });

  it('a failed preemption search is remembered for later, larger jobs of the queue at the same state only', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    const first = buildJob(core, makeJob('f').queue('a').gpus(4).submittedAt(10).build());
    first.releasable = new Map([['h100', [0, 0, 0]]]);
    rememberPreemptFail(core, first);
    const larger = buildJob(core, makeJob('l').queue('a').gpus(6).submittedAt(20).build());
    const smaller = buildJob(core, makeJob('s').queue('a').gpus(2).submittedAt(20).build());
    expect(knownPreemptFail(core, larger)).toBe(first.releasable);
    expect(knownPreemptFail(core, smaller)).toBeUndefined();
    submit(core, makeJob('x').queue('a').gpus(8).build());
    cycle(core); // an admission changes the state version: the memo no longer applies
    expect(knownPreemptFail(core, larger)).toBeUndefined();
  });
});

describe('a job waiting on quota for one flavor and on nodes for another', () => {
  it('wakes when the quota is released, not only when nodes of the other flavor appear', () => {
    // h100 has nodes; a100 has quota but no node at all. The job fails h100 on quota (b's 8
    // are in use, nothing to borrow) and a100 on nodes: the reason shown is the node one, yet a
    // release of h100 quota must wake it.
    const { core } = makeCore({
      nodes: nodes(2, 'h100', 8),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).nominal('a100', 16),
        makeQueue('b').cohort('c').nominal('h100', 8),
      ],
    });
    admit(core, makeJob('held').queue('b').gpus(8));
    const res = admit(core, makeJob('wide').queue('a').gpus(8).pods(2));
    expect(res.pending.find((p) => p.jobId === 'wide')?.reason).toBe('NoFittingNode');
    expect(jobOf(core, 'wide').parkKind).toBe('any');
    finish(core, 'held');
    expect(cycle(core).admitted.map((x) => x.jobId)).toEqual(['wide']);
  });
});
