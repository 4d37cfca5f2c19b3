// Fair-sharing preemption rules (src/core/scheduling/preemption/fair-sharing.ts), called directly: which
// queues
// may lose jobs, the per-victim no-ping-pong rule, and the 'fair-share' reason.
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../../src/core/scheduling/jobs.js';
import {
  fairShareAllows,
  fairShareOtherQueues,
} from '../../../src/core/scheduling/preemption/fair-sharing.js';
import { preemptionReason } from '../../../src/core/scheduling/preemption/preemptor.js';
import { weightedShare } from '../../../src/core/scheduling/queue-usage.js';
import type { CoreState, JobState } from '../../../src/core/scheduling/state.js';
import { chargeQueue } from '../../../src/core/scheduling/trail.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { gpuUsage, makeCore, queueOf, snapshot } from '../core-builders.js';

/** Cohort c: a, b, d with nominal 8 each and e with 16 it lends; usage charged directly. */
function cohort(usage: Record<string, number>): CoreState {
  const { core } = makeCore({
    nodes: nodes(5),
    queues: ['a', 'b', 'd']
      .map((n) => makeQueue(n).cohort('c').nominal('h100', 8))
      .concat(makeQueue('e').cohort('c').nominal('h100', 16)),
    options: { fairSharing: { enabled: true } },
  });
  for (const [q, g] of Object.entries(usage)) chargeQueue(queueOf(core, q), gpuUsage('h100', g), 1);
  return core;
}

/** A job of queue q holding `gpus` (as if admitted), for the victim side of the rule. */
function holder(core: CoreState, q: string, gpus: number): JobState {
  const j = buildJob(core, makeJob().queue(q).gpus(gpus).build());
  j.usage = gpuUsage('h100', gpus);
  return j;
}

describe('fair sharing: which queues may lose jobs', () => {
  it('only queues whose share is above the preemptor’s share after admission; the trial charge is rolled back', () => {
    const core = cohort({ b: 16, d: 8 });
    const before = snapshot(core);
    const ok = fairShareOtherQueues(core, queueOf(core, 'a'), gpuUsage('h100', 4));
    expect(snapshot(core)).toEqual(before);
    expect(ok(queueOf(core, 'b'))).toBe(true); // b borrows 8
    expect(ok(queueOf(core, 'd'))).toBe(false); // d at its nominal: share 0, not above a's 0
  });

  it('a preemptor that will borrow more than a queue can only take from queues above that share', () => {
    const core = cohort({ a: 8, b: 12, d: 16 });
    const ok = fairShareOtherQueues(core, queueOf(core, 'a'), gpuUsage('h100', 6)); // a would borrow 6
    expect(ok(queueOf(core, 'b'))).toBe(false); // b borrows 4
    expect(ok(queueOf(core, 'd'))).toBe(true); // d borrows 8
  });
});

describe('fair sharing: no ping-pong', () => {
  it('allows the move when the preemptor ends at most at the victim queue’s share and below its share before', () => {
    const core = cohort({ a: 8, b: 16 });
    const before = snapshot(core);
    expect(fairShareAllows(core, queueOf(core, 'a'), gpuUsage('h100', 4), holder(core, 'b', 4))).toBe(true);
    expect(snapshot(core)).toEqual(before); // every trial change rolled back
  });

  it('refuses between equal shares: two queues would trade the job back and forth', () => {
    const core = cohort({ a: 12, b: 12 });
    expect(weightedShare(queueOf(core, 'a'))).toBe(weightedShare(queueOf(core, 'b')));
    expect(fairShareAllows(core, queueOf(core, 'a'), gpuUsage('h100', 4), holder(core, 'b', 4))).toBe(false);
    expect(core.trail.length).toBe(0);
  });

  it('refuses when the preemptor would end above the victim queue', () => {
    const core = cohort({ a: 8, b: 12 });
    expect(fairShareAllows(core, queueOf(core, 'a'), gpuUsage('h100', 8), holder(core, 'b', 4))).toBe(false);
  });
});

describe('fair sharing: reasons', () => {
  it('a preemptor that ends up borrowing wins by fair-share; one within its nominal reclaims', () => {
    const core = cohort({});
    const p = holder(core, 'a', 1);
    const v = holder(core, 'b', 1);
    expect(preemptionReason(core, p, v, true)).toBe('fair-share');
    expect(preemptionReason(core, p, v, false)).toBe('reclaim');
  });
});
