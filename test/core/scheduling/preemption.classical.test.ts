// Classical preemption (src/core/scheduling/preemption/classical.ts, candidates.ts, minimal-set.ts), called
// directly: which other queues may lose jobs, candidate order, the staged minimal victim search.
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../../src/core/scheduling/jobs.js';
import { candidates } from '../../../src/core/scheduling/preemption/candidates.js';
import { classicalOtherQueues, classicalSearch } from '../../../src/core/scheduling/preemption/classical.js';
import { preemptionReason } from '../../../src/core/scheduling/preemption/preemptor.js';
import { available, GPU } from '../../../src/core/scheduling/quota.js';
import type { QueueState } from '../../../src/core/scheduling/state.js';
import { rollback } from '../../../src/core/scheduling/trail.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { admit, gpuUsage, jobOf, makeCore, queueOf, snapshot } from '../core-builders.js';

describe('which other queues may lose jobs (no fair sharing)', () => {
  const rows: [boolean, 'Never' | 'LowerPriority' | 'Any', 'Never' | 'LowerPriority', boolean][] = [
    // underNominal, reclaimWithinCohort, borrowWithinCohort → others allowed
    [true, 'Any', 'Never', true],
    [true, 'LowerPriority', 'Never', true],
    [true, 'Never', 'Never', false],
    [false, 'Any', 'Never', false], // reclaim only while under nominal
    [false, 'Never', 'LowerPriority', true], // borrowWithinCohort lets a borrowing job preempt
    [true, 'Never', 'LowerPriority', true],
  ];
  for (const [under, reclaim, borrow, want] of rows)
    it(`underNominal=${under} reclaim=${reclaim} borrow=${borrow} → ${want}`, () => {
      const q = { reclaim, borrowPolicy: borrow } as QueueState;
      expect(classicalOtherQueues(q, under)({} as QueueState)).toBe(want);
    });
});

describe('candidates and the staged search', () => {
  const cohort = () => {
    const { core, clock } = makeCore({
      nodes: nodes(4),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 24).reclaim('Any').withinQueue('LowerPriority'),
        makeQueue('b').cohort('c').nominal('h100', 0),
        makeQueue('x').cohort('c').nominal('h100', 0).isolation('BEST_EFFORT'),
      ],
    });
    // One admission per cycle: later ones are "more recently admitted".
    for (const j of [
      makeJob('b1').queue('b').gpus(4),
      makeJob('be1').queue('x').gpus(4),
      makeJob('b2').queue('b').gpus(4).priority('experiment'),
      makeJob('b3').queue('b').gpus(4),
      makeJob('a-exp').queue('a').gpus(4).priority('experiment'),
    ]) {
      clock.advance(1000);
      admit(core, j);
    }
    return core;
  };

  it('orders other queues first (best-effort before all), then lower priority, most recently admitted; own queue last', () => {
    const core = cohort();
    const job = buildJob(core, makeJob('p').queue('a').gpus(8).build());
    const request = gpuUsage('h100', 8);
    const cands = candidates(core, job, request, [['h100', GPU]], () => true);
    expect(cands.map((c) => [c.job.spec.id, c.other])).toEqual([
      ['be1', true],
      ['b2', true],
      ['b3', true],
      ['b1', true],
      ['a-exp', false],
    ]);
  });

  it('a queue refused by the policy contributes no candidates', () => {
    const core = cohort();
    const job = buildJob(core, makeJob('p').queue('a').gpus(8).build());
    const b = queueOf(core, 'b');
    const cands = candidates(core, job, gpuUsage('h100', 8), [['h100', GPU]], (v) => v !== b);
    expect(cands.map((c) => c.job.spec.id)).toEqual(['be1', 'a-exp']);
  });

  it('reclaim under nominal takes the fewest victims, never pushing a queue below its nominal; they stay released on the trail', () => {
    const { core, clock } = makeCore({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 8),
      ],
    });
    for (const id of ['b1', 'b2', 'b3']) {
      clock.advance(1000);
      admit(core, makeJob(id).queue('b').gpus(4));
    }
    const before = snapshot(core);
    const a = queueOf(core, 'a');
    const job = buildJob(core, makeJob('p').queue('a').gpus(6).build());
    const request = gpuUsage('h100', 6);
    const need: [string, number][] = [['h100', GPU]];
    const cands = candidates(core, job, request, need, classicalOtherQueues(a, true));
    expect(cands.map((c) => c.job.spec.id)).toEqual(['b3', 'b2', 'b1']);
    const fits = (allowBorrowing: boolean): boolean =>
      available(a.node, 'h100', GPU) >= 6000 &&
      (allowBorrowing || (a.node.flavors.get('h100')?.usage[GPU] ?? 0) + 6000 <= 8000);
    const victims = classicalSearch(core, job, request, need, cands, [], true, fits, new Set());
    expect(victims?.map((v) => v.spec.id)).toEqual(['b3']);
    expect(available(a.node, 'h100', GPU)).toBe(8000);
    rollback(core, 0);
    expect(snapshot(core)).toEqual(before);
  });

  it('not under nominal and no own candidates: no victims, and nothing left on the trail', () => {
    const core = cohort();
    const job = buildJob(core, makeJob('p').queue('a').gpus(8).build());
    const others = candidates(core, job, gpuUsage('h100', 8), [['h100', GPU]], () => true).filter(
      (c) => c.other,
    );
    const victims = classicalSearch(
      core,
      job,
      gpuUsage('h100', 8),
      [['h100', GPU]],
      others,
      [],
      false,
      () => true,
      new Set(),
    );
    expect(victims).toBeNull();
    expect(core.trail.length).toBe(0);
  });
});

describe('preemption reasons', () => {
  it('own queue → priority, another queue → reclaim, a queue over its closed window → window-closed', () => {
    const { core } = makeCore({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
    });
    admit(
      core,
      makeJob('a1').queue('a').gpus(2),
      makeJob('b1').queue('b').gpus(2),
      makeJob('p').queue('a').gpus(1),
    );
    const p = jobOf(core, 'p');
    expect(preemptionReason(core, p, jobOf(core, 'a1'), false)).toBe('priority');
    expect(preemptionReason(core, p, jobOf(core, 'b1'), true)).toBe('reclaim'); // no fair sharing: never 'fair-share'
    queueOf(core, 'b').windowReclaimable = true;
    expect(preemptionReason(core, p, jobOf(core, 'b1'), false)).toBe('window-closed');
  });
});
