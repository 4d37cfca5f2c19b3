// The cycle's phases (src/core/scheduling/cycle.ts) seen through cycle(core): heads, order, try, commit or
// park/block, and the deferred wake of victims' queues.
import { describe, expect, it } from 'vitest';
import { cycle } from '../../../src/core/scheduling/cycle.js';
import { submit } from '../../../src/core/scheduling/jobs.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { admit, jobOf, makeCore, queueOf } from '../core-builders.js';

describe('cycle phases', () => {
  it('with no active queue a cycle does nothing', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    admit(core, makeJob('r').queue('a').gpus(8));
    expect(core.active.size).toBe(0);
    const r = cycle(core);
    expect([r.admitted, r.preempted, r.pending]).toEqual([[], [], []]);
  });

  it('BestEffortFIFO: a head that cannot fit is parked and the next job is tried in the same cycle', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    const r = admit(
      core,
      makeJob('big').queue('a').gpus(8).pods(2).submittedAt(1),
      makeJob('small').queue('a').gpus(4).submittedAt(2),
    );
    expect(r.admitted.map((x) => x.jobId)).toEqual(['small']);
    expect(r.pending.map((p) => [p.jobId, p.reason])).toEqual([['big', 'ExceedsMaxQuota']]);
    expect(jobOf(core, 'big').parked).toBe(true);
  });

  it('StrictFIFO: a head that cannot fit blocks its queue; nothing behind it is tried', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8).strictFIFO()] });
    admit(core, makeJob('r').queue('a').gpus(6));
    const r = admit(
      core,
      makeJob('head').queue('a').gpus(4).submittedAt(1),
      makeJob('behind').queue('a').gpus(1).submittedAt(2),
    );
    expect(r.admitted).toEqual([]);
    expect(r.pending.map((p) => p.jobId)).toEqual(['head']);
    const a = queueOf(core, 'a');
    expect(a.blocked).toBe(true);
    expect(core.active.has(a)).toBe(false);
  });

  it('order: without fair sharing a non-borrowing head goes before a borrowing one', () => {
    const { core } = makeCore({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
    });
    // a's head would borrow (6 > 4) and is older; b's fits its nominal: b goes first and a no longer fits.
    submit(core, makeJob('a-borrow').queue('a').gpus(6).submittedAt(1).priority('production').build());
    submit(core, makeJob('b-fit').queue('b').gpus(4).submittedAt(2).build());
    const r = cycle(core);
    expect(r.admitted.map((x) => x.jobId)).toEqual(['b-fit']);
    expect(r.pending.map((p) => p.jobId)).toEqual(['a-borrow']);
  });

  it('a victim is not re-admitted in the cycle that evicted it; its queue is woken at the next cycle', () => {
    const { core } = makeCore({
      nodes: nodes(1),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 0),
      ],
    });
    admit(core, makeJob('v').queue('b').gpus(8));
    const r = admit(core, makeJob('p').queue('a').gpus(8));
    expect(r.preempted.map((x) => [x.victimId, x.reason])).toEqual([['v', 'reclaim']]);
    expect(core.deferred.has(queueOf(core, 'b'))).toBe(true);
    expect(jobOf(core, 'v').status).toBe('pending');
    cycle(core);
    expect(core.deferred.size).toBe(0);
  });
});
