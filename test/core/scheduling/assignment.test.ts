// Flavor assignment (src/core/scheduling/assignment/): quota mode, direct assignment on the trail, the gang
// reduction, and the diagnosis of a job that does not fit, called directly on a CoreState.
import { describe, expect, it } from 'vitest';
import { assignDirect } from '../../../src/core/scheduling/assignment/direct.js';
import { assignReducedGang, evaluate } from '../../../src/core/scheduling/assignment/nominate.js';
import {
  BORROW,
  FIT,
  NOFIT,
  PREEMPT,
  PREEMPT_BORROW,
  quotaMode,
} from '../../../src/core/scheduling/assignment/quota-mode.js';
import { buildJob } from '../../../src/core/scheduling/jobs.js';
import { chargeQueue, rollback } from '../../../src/core/scheduling/trail.js';
import { makeJob, makeNode, makeQueue, nodes } from '../builders.js';
import { admit, gpuUsage, makeCore, queueOf, snapshot } from '../core-builders.js';

const pair = () =>
  makeCore({
    nodes: nodes(4),
    queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
  });
const gpus = (n: number): number[] => [n * 1000, 0, 0];

describe('quota mode (Fit → Borrow → Preempt → Preempt+Borrow → no fit)', () => {
  const cases: { name: string; bUses: number; aUses: number; request: number; mode: number }[] = [
    { name: 'within unused nominal: Fit', aUses: 0, bUses: 0, request: 4, mode: FIT },
    { name: 'above nominal, the cohort lends: Borrow', aUses: 0, bUses: 0, request: 6, mode: BORROW },
    { name: 'within nominal but b borrowed it: Preempt', aUses: 0, bUses: 8, request: 4, mode: PREEMPT },
    {
      name: 'above nominal and nothing free: Preempt+Borrow',
      aUses: 0,
      bUses: 8,
      request: 6,
      mode: PREEMPT_BORROW,
    },
    { name: 'more than the cohort holds: no fit', aUses: 0, bUses: 0, request: 9, mode: NOFIT },
    {
      name: 'what the job already charged counts against the maximum',
      aUses: 0,
      bUses: 0,
      request: 5,
      mode: NOFIT,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const { core } = pair();
      chargeQueue(queueOf(core, 'b'), gpuUsage('h100', c.bUses), 1);
      chargeQueue(queueOf(core, 'a'), gpuUsage('h100', c.aUses), 1);
      const charged = c.name.startsWith('what the job') ? gpus(4) : undefined;
      const m = quotaMode(queueOf(core, 'a'), 'h100', gpus(c.request), charged);
      expect(m.mode).toBe(c.mode);
      expect(m.requested).toBe((c.request + (charged ? 4 : 0)) * 1000);
    });

  it('a flavor the queue does not declare is no fit', () => {
    const { core } = pair();
    expect(quotaMode(queueOf(core, 'a'), 'a100', gpus(1), undefined).mode).toBe(NOFIT);
  });
});

describe('direct assignment', () => {
  it('charges quota and places pods on the trail; rolling back leaves the state as it was', () => {
    const { core } = pair();
    const before = snapshot(core);
    const job = buildJob(core, makeJob('j').queue('a').gpus(4).pods(2).build());
    const r = assignDirect(core, job, [2]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.parts.map((p) => [p.flavor, p.count, p.allocs.length])).toEqual([['h100', 2, 2]]);
    expect(r.usage.get('h100')).toEqual([8000, 0, 0]);
    expect(core.trail.length).toBeGreaterThan(0);
    rollback(core, 0);
    expect(snapshot(core)).toEqual(before);
  });

  it('takes the first preferred flavor that fits, in quota-mode order (Fit before Borrow)', () => {
    const { core } = makeCore({
      nodes: [...nodes(1), ...nodes(1, 'a100')],
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 2).nominal('a100', 8),
        makeQueue('b').cohort('c').nominal('h100', 8),
      ],
    });
    const job = buildJob(core, makeJob('j').queue('a').gpus(4).flavors('h100', 'a100').build());
    const r = assignDirect(core, job, [1]);
    expect(r.ok && r.parts[0]?.flavor).toBe('a100'); // h100 would borrow, a100 fits
  });

  it('a failed assignment rolls back its own trial changes and diagnoses NoNodeFits with the free blocks', () => {
    const { core } = makeCore({ nodes: nodes(2), queues: [makeQueue('a').nominal('h100', 16)] });
    admit(core, makeJob('r1').queue('a').gpus(6), makeJob('r2').queue('a').gpus(6));
    const before = snapshot(core);
    const job = buildJob(core, makeJob('j').queue('a').gpus(4).build());
    const r = assignDirect(core, job, [1]);
    expect(snapshot(core)).toEqual(before);
    expect(r).toMatchObject({
      ok: false,
      reason: 'NoNodeFits',
      nodeFit: [{ flavor: 'h100', largestFreeGpusOnOneNode: 2, freeGpus: 4, podsNeeded: 1, gpusPerPod: 4 }],
    });
  });

  it('no eligible node at all is NoFittingNode (it waits on the flavor)', () => {
    const { core } = makeCore({
      nodes: [makeNode('n').dedicatedTo('t-b')],
      queues: [makeQueue('a').nominal('h100', 8)],
    });
    const job = buildJob(core, makeJob('j').queue('a').gpus(1).build());
    expect(assignDirect(core, job, [1])).toMatchObject({
      ok: false,
      reason: 'NoFittingNode',
      waitFlavors: ['h100'],
    });
  });

  it('beyond what the queue can ever get is ExceedsMaxQuota with a numeric shortfall; evaluate does not search victims for it', () => {
    const { core } = pair();
    const job = buildJob(core, makeJob('j').queue('a').gpus(8).pods(2).build());
    const r = evaluate(core, job, true);
    expect(r).toMatchObject({
      ok: false,
      reason: 'ExceedsMaxQuota',
      shortfall: { flavor: 'h100', resource: 'gpu', requested: 16, maxAvailable: 8 },
    });
    expect(job.releasable).toBeNull();
  });
});

describe('gang reduction', () => {
  it('admits the largest count down to the gang minimum that fits without preemption', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    admit(core, makeJob('r').queue('a').gpus(5));
    const job = buildJob(core, makeJob('j').queue('a').gpus(1).pods(6, 2).build());
    expect(assignDirect(core, job, [6]).ok).toBe(false);
    const plan = assignReducedGang(core, job);
    expect(plan?.parts.map((p) => p.count)).toEqual([3]);
    expect(plan?.mode).toBe('fit');
  });

  it('returns null when not even the minimum fits, or the gang may not shrink', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    admit(core, makeJob('r').queue('a').gpus(7));
    expect(
      assignReducedGang(core, buildJob(core, makeJob('j').queue('a').gpus(1).pods(6, 2).build())),
    ).toBeNull();
    expect(
      assignReducedGang(core, buildJob(core, makeJob('k').queue('a').gpus(1).pods(6).build())),
    ).toBeNull();
    expect(core.trail.length).toBe(0);
  });
});
