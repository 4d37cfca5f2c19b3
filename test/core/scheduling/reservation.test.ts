// Bounded tails (reservation.ts): a wide gang above its nominal, starved by a stream of small
// borrowers, gets nodes reserved once it has waited long; short jobs still backfill, jobs within
// their nominal are never kept off, explain says both sides, what-ifs leave the state as it was.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Scheduler, SchedulerOptions } from '../../../src/core/scheduling/index.js';
import { ManualClock, makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const MIN = 60_000;

interface Run {
  s: Scheduler;
  clock: ManualClock;
  t0: number;
  /** Minute the gang was admitted. */
  wideStart: number | null;
  /** The stream's jobs: id → expected end once admitted. */
  ends: Map<string, number>;
}

/** Two 8-GPU nodes full of b's jobs (ending at minutes 60…75); a submits a 2 × 8 GPU gang (borrowing); b
 * (nominal 0) streams 1-GPU, 1-hour jobs, all borrowed; n (nominal 8) is idle.
 */
function setup(tails: SchedulerOptions['boundedTails']): Run {
  const clock = new ManualClock();
  const { s } = makeCluster({
    clock,
    nodes: nodes(2),
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8),
      makeQueue('b').cohort('c').nominal('h100', 0),
      makeQueue('n').cohort('c').nominal('h100', 8),
    ],
    options: { fairSharing: { enabled: true }, ...(tails ? { boundedTails: tails } : {}) },
  });
  const run: Run = { s, clock, t0: clock.now(), wideStart: null, ends: new Map() };
  for (let i = 0; i < 16; i++)
    s.submit(
      makeJob(`b0-${i}`)
        .queue('b')
        .gpus(1)
        .duration((60 + i) * MIN)
        .submittedAt(clock.now())
        .build(),
    );
  record(run, s.cycle());
  s.submit(
    makeJob('wide')
      .queue('a')
      .pods(2)
      .gpus(8)
      .duration(60 * MIN)
      .submittedAt(clock.now())
      .build(),
  );
  record(run, s.cycle());
  return run;
}

function record(run: Run, res: ReturnType<Scheduler['cycle']>): void {
  for (const a of res.admitted) {
    if (a.jobId === 'wide') run.wideStart = (res.at - run.t0) / MIN;
    const d = a.jobId.startsWith('short')
      ? 5 * MIN
      : a.jobId === 'wide'
        ? 60 * MIN
        : Number(a.jobId.match(/^b0-(\d+)$/)?.[1] ?? 0) * MIN + 60 * MIN;
    run.ends.set(a.jobId, res.at + d);
  }
}

/** One minute: finish what ended, b submits one more 1-hour job, one cycle. */
function minute(run: Run, m: number): void {
  run.clock.advance(MIN);
  for (const [id, end] of [...run.ends]) {
    if (end <= run.clock.now()) {
      run.s.finish(id);
      run.ends.delete(id);
    }
  }
  run.s.submit(
    makeJob(`b-${m}`)
      .queue('b')
      .gpus(1)
      .duration(60 * MIN)
      .submittedAt(run.clock.now())
      .build(),
  );
  record(run, run.s.cycle());
}

describe('reservations for long-waiting heads', () => {
  it('without a reservation the stream of small borrowers starves the wide gang', () => {
    const run = setup({ reserve: false });
    for (let m = 1; m <= 200; m++) minute(run, m);
    expect(run.wideStart).toBeNull();
  });

  it('with one, the gang starts when the running jobs it waits for end, and the stream is kept off its nodes meanwhile', () => {
    const run = setup({ afterMs: 30 * MIN });
    let explained = false;
    for (let m = 1; m <= 200 && run.wideStart === null; m++) {
      minute(run, m);
      if (m === 65) {
        const before = run.s.debugState();
        const w = run.s.explain('wide');
        expect(w.reservation?.nodes).toEqual(['h100-0', 'h100-1']);
        expect(w.reservation!.start).toBeGreaterThan(run.clock.now());
        expect(w.message).toMatch(/reserved for it from/);
        const b = run.s.explain('b-1');
        expect(b.reason).toBe('NoNodeFits');
        expect(b.keptOffReserved).toEqual({ nodes: 2, start: w.reservation!.start });
        expect(b.message).toMatch(/reserved from .* for a job that has waited long,/);
        // Explain and preview are what-ifs: the state is exactly as it was.
        run.s.preview(
          makeJob('probe')
            .queue('b')
            .gpus(1)
            .duration(60 * MIN)
            .submittedAt(run.clock.now())
            .build(),
        );
        expect(run.s.debugState()).toEqual(before);
        explained = true;
      }
    }
    expect(explained).toBe(true);
    // Reserved at minute 30 for minute 75 (when b's first jobs have all ended): the stream is kept off
    // meanwhile.
    expect(run.wideStart).toBe(75);
  });

  it('a short job that ends before the reserved start backfills; a job within its nominal is never kept off', () => {
    const run = setup({ afterMs: 30 * MIN });
    for (let m = 1; m <= 65; m++) minute(run, m);
    expect(run.s.explain('wide').reservation).toBeDefined();
    // Free GPUs exist (stream jobs ended, their successors are kept off).
    const free = run.s.nodeStatus().reduce((x, n) => x + n.free.gpu, 0);
    expect(free).toBeGreaterThan(0);
    run.s.submit(
      makeJob('short-1')
        .queue('b')
        .gpus(1)
        .duration(5 * MIN)
        .submittedAt(run.clock.now())
        .build(),
    );
    run.s.submit(
      makeJob('n-long')
        .queue('n')
        .gpus(1)
        .duration(600 * MIN)
        .submittedAt(run.clock.now())
        .build(),
    );
    const res = run.s.cycle();
    expect(res.admitted.map((a) => a.jobId).sort()).toEqual(['n-long', 'short-1']);
    // The 1-hour stream jobs of b still wait.
    expect(run.s.jobState('b-1')).toBe('pending');
  });

  it('is on by default (2 h) and reaches nobody who waited less', () => {
    const run = setup(undefined);
    for (let m = 1; m <= 100; m++) minute(run, m);
    expect(run.s.explain('wide').reservation).toBeUndefined();
    for (let m = 101; m <= 260 && run.wideStart === null; m++) minute(run, m);
    expect(run.wideStart).not.toBeNull();
  });
});

describe('reservations: properties', () => {
  type Op =
    | { kind: 'submit'; queue: number; gpu: number; pods: number; minutes: number }
    | { kind: 'finish'; pick: number }
    | { kind: 'advance'; minutes: number }
    | { kind: 'cycle' };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('submit' as const),
        queue: fc.integer({ min: 0, max: 2 }),
        gpu: fc.constantFrom(1, 2, 4, 8),
        pods: fc.integer({ min: 1, max: 3 }),
        minutes: fc.integer({ min: 1, max: 120 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        minutes: fc.integer({ min: 1, max: 40 }),
      }),
    },
    { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  );

  /** Replays ops on 3 nodes / 3 queues with reservations after 10 minutes; checks what-ifs and capacity
   * after every cycle.
   */
  function replay(ops: Op[]): unknown[] {
    const clock = new ManualClock();
    const { s } = makeCluster({
      clock,
      nodes: nodes(3),
      queues: [
        makeQueue('q0').cohort('c').nominal('h100', 8),
        makeQueue('q1').cohort('c').nominal('h100', 16),
        makeQueue('q2').cohort('c').nominal('h100', 0),
      ],
      options: { fairSharing: { enabled: true }, boundedTails: { afterMs: 10 * MIN, maxReservations: 2 } },
    });
    const out: unknown[] = [];
    const running: string[] = [];
    const pending = new Set<string>();
    let n = 0;
    for (const op of [...ops, { kind: 'cycle' as const }]) {
      if (op.kind === 'submit') {
        const id = `j${n++}`;
        s.submit(
          makeJob(id)
            .queue(`q${op.queue}`)
            .pods(op.pods)
            .gpus(op.gpu)
            .duration(op.minutes * MIN)
            .submittedAt(clock.now())
            .build(),
        );
        pending.add(id);
      } else if (op.kind === 'finish' && running.length > 0) {
        const [id] = running.splice(op.pick % running.length, 1);
        s.finish(id as string);
      } else if (op.kind === 'advance') clock.advance(op.minutes * MIN);
      else if (op.kind === 'cycle') {
        const r = s.cycle();
        for (const a of r.admitted) {
          running.push(a.jobId);
          pending.delete(a.jobId);
        }
        for (const p of r.preempted) {
          running.splice(running.indexOf(p.victimId), 1);
          pending.add(p.victimId);
        }
        out.push(r);
        const before = s.debugState();
        const ex = [...pending].map((id) => s.explain(id));
        s.preview(
          makeJob('probe')
            .queue('q2')
            .pods(2)
            .gpus(8)
            .duration(30 * MIN)
            .submittedAt(clock.now())
            .build(),
        );
        expect(s.debugState()).toEqual(before);
        out.push(ex.map((e) => [e.jobId, e.reason, e.reservation, e.keptOffReserved]));
        for (const st of s.nodeStatus()) expect(st.free.gpu).toBeGreaterThanOrEqual(0);
        expect(ex.filter((e) => e.reservation).length).toBeLessThanOrEqual(2);
      }
    }
    return out;
  }

  it('what-ifs leave the state exactly as it was, capacity holds, and the same calls give the same decisions', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 10, maxLength: 60 }), (ops) => {
        expect(replay(ops)).toEqual(replay(ops));
      }),
      { numRuns: 30 },
    );
  });
});
