// A job of a class that is never preempted ("guaranteed", e.g. inference-critical; an inference
// service's minimum replicas) fits if its queue's never-preempted usage plus the job stays within the
// nominal (core guaranteed.ts, quota-mode.ts): the queue's preemptible jobs — borrowing or not — and
// what it lent are room it takes back through the normal preemption paths (its own lower-priority
// jobs whatever withinQueue says, reclaim of lent nominal by the queue's reclaim policy). So
// (a) guaranteed usage never exceeds the nominal, (b) within it the job never waits behind borrowers,
// (c) it is never a victim, (d) the pending reason says so in numbers.
// Random worlds: guaranteed-within-nominal.properties.test.ts.
import { describe, expect, it } from 'vitest';
import type { PriorityClass } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const ids = (xs: { jobId: string }[]) => xs.map((x) => x.jobId).sort();
const victims = (r: { preempted: { victimId: string; reason: string }[] }) =>
  r.preempted.map((p) => [p.victimId, p.reason]).sort();

describe('(a) guaranteed usage stays within the nominal; the rest of the queue does not count', () => {
  it("the queue's borrowing training jobs do not take the room: guaranteed jobs fit up to the nominal, then wait for each other", () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 12)],
    });
    s.submit(makeJob('train').queue('a').pods(6).priority('training').build()); // borrows 2 of b's idle 12
    expect(s.cycle().admitted.map((x) => [x.jobId, x.mode])).toEqual([['train', 'borrow']]);
    s.submit(makeJob('ic2').queue('a').pods(2).priority('inference-critical').build());
    s.submit(makeJob('ic2b').queue('a').pods(2).priority('inference-critical').build());
    const r = s.cycle();
    // Within the nominal by its never-preempted usage (0, then 2 of 4): admitted without preempting, and
    // not "borrowed" — what a uses above its nominal is the training job's.
    expect(r.admitted.map((x) => [x.jobId, x.mode, x.borrowed])).toEqual([
      ['ic2', 'fit', false],
      ['ic2b', 'fit', false],
    ]);
    expect(r.preempted).toEqual([]);
    expect(s.queueStatus('a').resources[0]).toMatchObject({ nominal: 4, used: 10 });
    s.submit(makeJob('ic1').queue('a').pods(1).priority('inference-critical').build());
    const d = s.cycle().pending.find((p) => p.jobId === 'ic1')!;
    expect(d.reason).toBe('WaitingForQuota');
    expect(d.shortfall).toMatchObject({
      requested: 1,
      nominal: 4,
      used: 10,
      guaranteedUsed: 4,
      available: 0,
    });
    expect(d.message).toContain('it waits for those jobs to end');
    // A guaranteed job's end makes the room (the training job's would not).
    s.finish('ic2');
    expect(ids(s.cycle().admitted)).toEqual(['ic1']);
  });
});

describe('(b) within the nominal it is admitted: by fitting, preempting its own queue, or reclaiming what it lent', () => {
  it('with idle quota in the cohort it fits at once, and the training job it passed becomes what a lender reclaims', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8),
        makeQueue('b').cohort('c').nominal('h100', 8).reclaim('Any'),
      ],
    });
    s.submit(makeJob('train').queue('a').pods(8).priority('training').build());
    s.cycle();
    const spec = makeJob('ic').queue('a').pods(4).priority('inference-critical').build();
    expect(s.preview(spec)).toMatchObject({ admissible: true, borrowed: false, wouldPreempt: [] });
    s.submit(spec);
    expect(s.cycle().admitted.map((x) => [x.jobId, x.mode])).toEqual([['ic', 'fit']]);
    // b asks for its nominal: the training job (a above its nominal) goes, never the guaranteed one.
    s.submit(makeJob('b8').queue('b').pods(8).priority('training').build());
    const r = s.cycle();
    expect(victims(r)).toEqual([['train', 'reclaim']]);
    expect(ids(r.admitted)).toEqual(['b8']);
    expect(s.jobState('ic')).toBe('admitted');
  });

  it("the minimum rises while the service's burst replicas fill its nominal and borrow, the cohort full: a burst replica yields (reclaim), whatever withinQueue says", () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [
        makeQueue('svc').cohort('c').nominal('h100', 4).withinQueue('Never').reclaim('Any'),
        makeQueue('train').cohort('c').nominal('h100', 4),
      ],
    });
    for (let i = 0; i < 6; i++) s.submit(makeJob(`burst${i}`).queue('svc').priority('production').build());
    s.cycle();
    s.submit(makeJob('t2').queue('train').pods(2).priority('training').build());
    s.cycle();
    expect(s.queueStatus('svc').resources[0]).toMatchObject({ nominal: 4, used: 6 });
    s.submit(makeJob('min0').queue('svc').priority('inference-critical').build());
    const r = s.cycle();
    expect(r.admitted.map((x) => [x.jobId, x.mode, x.borrowed])).toEqual([['min0', 'preempt', false]]);
    expect(r.preempted).toHaveLength(1);
    expect(r.preempted[0]).toMatchObject({ victimQueue: 'svc', reason: 'reclaim', preemptorId: 'min0' });
    expect(s.jobState('t2')).toBe('admitted');
  });

  it('what it lent comes back first, its own preemptible jobs give the rest; the borrower is not pushed below its nominal', () => {
    for (const fairSharing of [false, true]) {
      const { s } = makeCluster({
        nodes: nodes(2),
        queues: [
          makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
          makeQueue('b').cohort('c').nominal('h100', 8),
        ],
        options: { fairSharing: { enabled: fairSharing } },
      });
      for (let i = 0; i < 5; i++) s.submit(makeJob(`a-prod${i}`).queue('a').priority('production').build());
      s.cycle();
      for (let i = 0; i < 11; i++) s.submit(makeJob(`b${i}`).queue('b').priority('training').build());
      s.cycle(); // b borrows 3 of a's nominal: the cohort is full
      expect(s.queueStatus('b').resources[0]).toMatchObject({ used: 11 });
      s.submit(makeJob('ic6').queue('a').pods(6).priority('inference-critical').build());
      const r = s.cycle();
      expect(ids(r.admitted)).toEqual(['ic6']);
      const byQueue = (q: string) => r.preempted.filter((p) => p.victimQueue === q);
      expect(byQueue('b').map((p) => p.reason)).toEqual(['reclaim', 'reclaim', 'reclaim']);
      expect(byQueue('a').map((p) => p.reason)).toEqual(['reclaim', 'reclaim', 'reclaim']);
      // a: 6 guaranteed + 2 production = its nominal; b back at its nominal.
      expect(s.queueStatus('a').resources[0]).toMatchObject({ used: 8 });
      expect(s.queueStatus('b').resources[0]).toMatchObject({ used: 8 });
    }
  });

  it("its own training jobs, with withinQueue LowerPriority, go by priority; under Never they yield the nominal's room (reclaim)", () => {
    for (const [w, reason] of [
      ['LowerPriority', 'priority'],
      ['Never', 'reclaim'],
    ] as const) {
      const { s } = makeCluster({
        nodes: nodes(1),
        queues: [
          makeQueue('a').cohort('c').nominal('h100', 8).withinQueue(w),
          makeQueue('b').cohort('c').nominal('h100', 0),
        ],
      });
      s.submit(makeJob('train').queue('a').pods(8).priority('training').build());
      s.cycle();
      s.submit(makeJob('ic').queue('a').pods(2).priority('inference-critical').build());
      const r = s.cycle();
      expect(victims(r)).toEqual([['train', reason]]);
      expect(r.admitted.map((x) => [x.jobId, x.mode])).toEqual([['ic', 'preempt']]);
    }
  });

  it('a preemptible job of higher priority in its queue is no victim: it waits, and the reason says the room is held', () => {
    const classes: PriorityClass[] = [
      { name: 'serve', value: 1000, preemptible: 'no' },
      { name: 'urgent', value: 2000, preemptible: 'yes' },
    ];
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 8).withinQueue('LowerPriority')],
      options: { priorityClasses: classes },
    });
    s.submit(makeJob('urgent').queue('a').pods(8).priority('urgent').build());
    s.cycle();
    const spec = makeJob('serve').queue('a').pods(4).priority('serve').build();
    const p = s.preview(spec);
    s.submit(spec);
    const r = s.cycle();
    expect(r.preempted).toEqual([]);
    const d = r.pending.find((x) => x.jobId === 'serve')!;
    expect(d.reason).toBe('WaitingForQuota');
    expect(d.shortfall).toMatchObject({ requested: 4, nominal: 8, used: 8, guaranteedUsed: 0, available: 0 });
    expect(d.message).toBe(
      "gpu on h100: requested 4, available 0 (nominal 8, used 8, never preempted 0, borrowing limit 0): its priority class is never preempted, so it runs only within the 8 its queue's nominal leaves beside the queue's jobs that are never preempted (0 of 8) and does not borrow; the rest of that room is used by preemptible jobs or lent, and preempting or reclaiming could not free it now",
    );
    expect([p.reason, p.message, p.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
    const e = s.explain('serve');
    expect([e.reason, e.message, e.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
  });
});

describe('(c) it is never a victim', () => {
  it('its queue above the nominal (guaranteed 4 of 4 plus borrowed production): a lender reclaims the production jobs only', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4),
        makeQueue('b').cohort('c').nominal('h100', 4).reclaim('Any'),
      ],
    });
    s.submit(makeJob('ic').queue('a').pods(4).priority('inference-critical').build());
    s.submit(makeJob('prod').queue('a').pods(4).priority('production').build());
    s.cycle();
    expect(s.queueStatus('a').resources[0]).toMatchObject({ used: 8 });
    s.submit(makeJob('b4').queue('b').pods(4).priority('experiment').build());
    const r = s.cycle();
    expect(victims(r)).toEqual([['prod', 'reclaim']]);
    expect(ids(r.admitted)).toEqual(['b4']);
    expect(s.jobState('ic')).toBe('admitted');
  });

  it('another guaranteed job of its queue, of higher priority, waits for the room instead', () => {
    const classes: PriorityClass[] = [
      { name: 'serve', value: 1000, preemptible: 'no' },
      { name: 'serve-top', value: 2000, preemptible: 'no' },
    ];
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 8).withinQueue('LowerPriority')],
      options: { priorityClasses: classes },
    });
    s.submit(makeJob('low').queue('a').pods(6).priority('serve').build());
    s.cycle();
    s.submit(makeJob('top').queue('a').pods(4).priority('serve-top').build());
    const r = s.cycle();
    expect(r.preempted).toEqual([]);
    expect(r.pending.find((x) => x.jobId === 'top')?.shortfall).toMatchObject({
      guaranteedUsed: 6,
      available: 2,
    });
  });
});

describe('(d) the numbers of a wait', () => {
  it('preview, explain and the cycle agree; a quota cut that leaves guaranteed usage above the nominal shows room 0', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    });
    s.submit(makeJob('ic6').queue('a').pods(6).priority('inference-critical').build());
    s.submit(makeJob('t2').queue('a').pods(2).priority('training').build());
    s.cycle();
    s.upsertQueue(makeQueue('a').cohort('c').nominal('h100', 4).build());
    const spec = makeJob('ic1').queue('a').pods(1).priority('inference-critical').build();
    const p = s.preview(spec);
    s.submit(spec);
    const d = s.cycle().pending.find((x) => x.jobId === 'ic1')!;
    expect(d.shortfall).toMatchObject({ requested: 1, nominal: 4, used: 8, guaranteedUsed: 6, available: 0 });
    expect(d.message).toContain('within the 0 its queue');
    expect(d.message).toContain('(6 of 4)');
    expect([p.reason, p.message, p.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
    const e = s.explain('ic1');
    expect([e.reason, e.message, e.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
  });
});
