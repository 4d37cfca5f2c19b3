// The upper-level controller: each rule, its bounds, reproducibility (also from a recorded
// adjustment alone), and — on a real core scheduler — that no setting it can choose takes a governed
// queue below its floor (its nominal comes back, by reclaim when lent).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyPolicy,
  BUILT_IN_POLICIES,
  type ControllerQueueInput,
  type ControllerSettings,
  clampSetting,
  controllerStep,
  DEFAULT_CONTROLLER_SETTINGS,
  type IsolationPolicy,
  type LimitSetting,
  replayAdjustment,
} from '../../../src/core/governance/index.js';
import {
  type JobSpec,
  type QueueSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock, makeJob, makeNode } from '../builders.js';

const POLICIES = new Map(BUILT_IN_POLICIES.map((p) => [p.name, p]));
const P = (name: string): IsolationPolicy => POLICIES.get(name)!;
/** A policy with a bounded borrow range, to see the borrow rules move something. */
const CAPPED: IsolationPolicy = {
  ...P('elastic'),
  name: 'capped',
  lend: { min: 0, base: 0.5, max: 1 },
  borrow: { min: 0, base: 1, max: 2 },
};
const WITH_CAPPED = new Map([...POLICIES, ['capped', CAPPED]]);
const S = DEFAULT_CONTROLLER_SETTINGS;

function input(queue: string, over: Partial<ControllerQueueInput> = {}): ControllerQueueInput {
  return {
    queue,
    tenant: `t-${queue}`,
    policy: 'elastic',
    nominalGpus: 8,
    usedGpus: 8,
    lentGpus: 0,
    borrowedGpus: 0,
    pendingGpus: 0,
    oldestWaitMs: 0,
    slaEligible: 0,
    slaMet: 0,
    utilization: null,
    ...over,
  };
}
const none = new Map<string, LimitSetting>();

describe('controllerStep rules', () => {
  it('TIGHTEN_LENDING when its own jobs wait for their nominal (long wait or missed SLA)', () => {
    const waits = input('a', { usedGpus: 2, pendingGpus: 4, oldestWaitMs: S.waitLimitMs + 1 });
    const [adj, ...rest] = controllerStep([waits], none, POLICIES, S);
    expect(rest).toEqual([]);
    expect(adj).toMatchObject({
      queue: 'a',
      tenant: 't-a',
      policy: 'elastic',
      from: { lend: 1, borrow: null },
      to: { lend: 0.75, borrow: null },
      reasons: ['TIGHTEN_LENDING'],
    });
    expect(adj!.input).toEqual(waits);
    // A missed SLA with a short wait tightens too.
    const missed = input('a', {
      usedGpus: 2,
      pendingGpus: 4,
      oldestWaitMs: 1000,
      slaEligible: 100,
      slaMet: 99,
    });
    expect(controllerStep([missed], none, POLICIES, S)[0]?.reasons).toEqual(['TIGHTEN_LENDING']);
    // Waiting exactly the limit, SLA met: nothing.
    expect(
      controllerStep(
        [input('a', { usedGpus: 2, pendingGpus: 4, oldestWaitMs: S.waitLimitMs })],
        none,
        POLICIES,
        S,
      ),
    ).toEqual([]);
    // Pending beyond its nominal (it uses all of it): its nominal is not what it waits for.
    expect(
      controllerStep(
        [input('a', { usedGpus: 8, pendingGpus: 4, oldestWaitMs: 10 * S.waitLimitMs })],
        none,
        POLICIES,
        S,
      ),
    ).toEqual([]);
    // Down to the policy's minimum, then no more.
    expect(
      controllerStep([waits], new Map([['a', { lend: 0.6, borrow: null }]]), POLICIES, S)[0]?.to,
    ).toEqual({ lend: 0.5, borrow: null });
    expect(controllerStep([waits], new Map([['a', { lend: 0.5, borrow: null }]]), POLICIES, S)).toEqual([]);
  });

  it('LEND_IDLE with idle nominal, nothing pending and the SLA met', () => {
    const idle = input('g', { policy: 'guaranteed', usedGpus: 2 });
    expect(controllerStep([idle], none, POLICIES, S)).toMatchObject([
      { from: { lend: 0.5, borrow: 0 }, to: { lend: 0.75, borrow: 0 }, reasons: ['LEND_IDLE'] },
    ]);
    expect(
      controllerStep([input('g', { policy: 'guaranteed', usedGpus: 2, pendingGpus: 1 })], none, POLICIES, S),
    ).toEqual([]);
    expect(
      controllerStep(
        [input('g', { policy: 'guaranteed', usedGpus: 2, slaEligible: 10, slaMet: 9 })],
        none,
        POLICIES,
        S,
      ),
    ).toEqual([]);
    expect(controllerStep([input('g', { policy: 'guaranteed', usedGpus: 8 })], none, POLICIES, S)).toEqual(
      [],
    );
    // At the maximum (elastic's base is 1): no change, no adjustment.
    expect(controllerStep([input('e', { usedGpus: 0 })], none, POLICIES, S)).toEqual([]);
    // Dedicated cannot move at all.
    expect(controllerStep([input('d', { policy: 'dedicated', usedGpus: 0 })], none, POLICIES, S)).toEqual([]);
  });

  it('TIGHTEN_BORROWING when a lender tightens; RELAX_BORROWING with pending jobs when nobody does', () => {
    const lender = input('a', {
      policy: 'capped',
      usedGpus: 2,
      lentGpus: 4,
      pendingGpus: 4,
      oldestWaitMs: 5 * 60_000,
    });
    const borrower = input('b', { policy: 'capped', borrowedGpus: 4, pendingGpus: 2 });
    const out = controllerStep([borrower, lender], none, WITH_CAPPED, S);
    expect(out.map((a) => [a.queue, a.reasons, a.to])).toEqual([
      ['a', ['TIGHTEN_LENDING'], { lend: 0.25, borrow: 1 }],
      ['b', ['TIGHTEN_BORROWING'], { lend: 0.5, borrow: 0.75 }],
    ]);
    expect(out[1]!.window).toEqual({ anyTightens: true, lenderTightens: true });
    // A tightening queue that lends nothing: borrowers keep their limit, and nobody relaxes.
    const notLending = { ...lender, lentGpus: 0 };
    expect(controllerStep([borrower, notLending], none, WITH_CAPPED, S).map((a) => a.queue)).toEqual(['a']);
    // Nobody tightens: a borrower with pending jobs gets more room, up to the maximum.
    expect(controllerStep([borrower], none, WITH_CAPPED, S)).toMatchObject([
      { queue: 'b', reasons: ['RELAX_BORROWING'], to: { lend: 0.5, borrow: 1.25 } },
    ]);
    expect(controllerStep([borrower], new Map([['b', { lend: 0.5, borrow: 2 }]]), WITH_CAPPED, S)).toEqual(
      [],
    );
    // Unlimited borrowing (borrow null) has nothing to move.
    expect(controllerStep([{ ...borrower, policy: 'elastic' }], none, POLICIES, S)).toEqual([]);
  });

  it('moves lend and borrow in one adjustment, clamps the setting in force first, ignores unknown policies, sorts by queue', () => {
    const outOfBounds = input('z', { policy: 'capped', usedGpus: 8, pendingGpus: 2 });
    const both = input('y', { policy: 'capped', usedGpus: 2, borrowedGpus: 1 });
    const lender = input('a', {
      policy: 'capped',
      usedGpus: 2,
      lentGpus: 4,
      pendingGpus: 4,
      oldestWaitMs: 1e9,
    });
    const out = controllerStep(
      [outOfBounds, both, lender, input('x', { policy: 'nope', usedGpus: 0 })],
      new Map([['z', { lend: 7, borrow: -3 }]]),
      WITH_CAPPED,
      S,
    );
    expect(out.map((a) => a.queue)).toEqual(['a', 'y']);
    expect(out[1]).toMatchObject({
      from: { lend: 0.5, borrow: 1 },
      to: { lend: 0.75, borrow: 0.75 },
      reasons: ['LEND_IDLE', 'TIGHTEN_BORROWING'],
    });
    // 'z' was out of bounds: from is the clamped setting; with a lender tightening it does not relax.
    const alone = controllerStep([outOfBounds], new Map([['z', { lend: 7, borrow: -3 }]]), WITH_CAPPED, S);
    expect(alone).toMatchObject([
      { from: { lend: 1, borrow: 0 }, to: { lend: 1, borrow: 0.25 }, reasons: ['RELAX_BORROWING'] },
    ]);
    for (const a of out)
      expect(Object.keys(a).sort()).toEqual([
        'from',
        'input',
        'policy',
        'queue',
        'reasons',
        'tenant',
        'to',
        'window',
      ]);
  });

  it('a queue named twice counts once (its first input)', () => {
    const first = input('a', { policy: 'guaranteed', usedGpus: 0 });
    const second = input('a', { policy: 'guaranteed', usedGpus: 0, pendingGpus: 3, oldestWaitMs: 1e9 });
    expect(controllerStep([first, second], none, POLICIES, S)).toMatchObject([{ reasons: ['LEND_IDLE'] }]);
  });
});

// ───────────────────────────── properties ─────────────────────────────

const rangeArb = (hi: number) =>
  fc
    .tuple(
      fc.double({ min: 0, max: hi, noNaN: true }),
      fc.double({ min: 0, max: hi, noNaN: true }),
      fc.double({ min: 0, max: hi, noNaN: true }),
    )
    .map((v) => v.sort((a, b) => a - b))
    .map(([min, base, max]) => ({ min: min!, base: base!, max: max! }));
const customPolicyArb = fc
  .record({ lend: rangeArb(1), borrow: fc.option(rangeArb(3), { nil: null }) })
  .map(({ lend, borrow }): IsolationPolicy => ({ ...P('elastic'), name: 'custom', lend, borrow }));
const queueInputArb = (i: number) =>
  fc
    .record({
      policy: fc.constantFrom('dedicated', 'guaranteed', 'elastic', 'best-effort', 'custom', 'unknown'),
      nominalGpus: fc.integer({ min: 0, max: 32 }),
      usedGpus: fc.double({ min: 0, max: 48, noNaN: true }),
      lentGpus: fc.constantFrom(0, 0, 1.5, 8),
      borrowedGpus: fc.constantFrom(0, 0, 2, 16),
      pendingGpus: fc.constantFrom(0, 0, 1, 8),
      oldestWaitMs: fc.integer({ min: 0, max: 600_000 }),
      slaEligible: fc.integer({ min: 0, max: 20 }),
      slaFail: fc.integer({ min: 0, max: 3 }),
      current: fc.option(
        fc.record({
          lend: fc.double({ min: -1, max: 2, noNaN: true }),
          borrow: fc.option(fc.double({ min: -1, max: 4, noNaN: true }), { nil: null }),
        }),
        { nil: undefined },
      ),
    })
    .map((r) => ({
      input: input(`q${i}`, { ...r, slaMet: Math.max(0, r.slaEligible - r.slaFail) }),
      current: r.current,
    }));
const windowArb = fc.record({
  custom: customPolicyArb,
  queues: fc
    .integer({ min: 1, max: 6 })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => queueInputArb(i)))),
  settings: fc.record({
    windowMs: fc.constant(300_000),
    step: fc.double({ min: 0.01, max: 1, noNaN: true }),
    waitLimitMs: fc.integer({ min: 0, max: 300_000 }),
    slaTarget: fc.double({ min: 0.5, max: 1, noNaN: true }),
  }),
  seed: fc.integer(),
});

describe('controllerStep properties', () => {
  it('stays within the policy bounds, reports only changes, is reproducible (also from one recorded adjustment) and order-independent', () => {
    fc.assert(
      fc.property(windowArb, ({ custom, queues, settings, seed }) => {
        const policies = new Map([...POLICIES, ['custom', custom]]);
        const inputs = queues.map((q) => q.input);
        const current = new Map(
          queues.flatMap((q) => (q.current ? [[q.input.queue, q.current] as const] : [])),
        );
        const out = controllerStep(inputs, current, policies, settings as ControllerSettings);
        expect(controllerStep(inputs, current, policies, settings)).toEqual(out);
        // Input order does not matter (queues are unique here).
        const shuffled = [...inputs].sort(
          (a, b) => ((a.queue.charCodeAt(1) * 31 + seed) % 7) - ((b.queue.charCodeAt(1) * 31 + seed) % 7),
        );
        expect(controllerStep(shuffled, current, policies, settings)).toEqual(out);
        const names = out.map((a) => a.queue);
        expect(names).toEqual([...new Set(names)].sort());
        for (const a of out) {
          const policy = policies.get(a.policy)!;
          expect(a.policy).not.toBe('unknown');
          expect(clampSetting(policy, a.to)).toEqual(a.to);
          expect(clampSetting(policy, a.from)).toEqual(a.from);
          expect(a.to.lend !== a.from.lend || a.to.borrow !== a.from.borrow).toBe(true);
          expect(a.reasons.length).toBeGreaterThan(0);
          expect(a).not.toHaveProperty('nominalGpus');
          // The audit record alone (input, from, window, settings, the policy) gives the same decision.
          expect(
            replayAdjustment(
              JSON.parse(JSON.stringify({ input: a.input, from: a.from, window: a.window })),
              policy,
              settings,
            ),
          ).toEqual({ to: a.to, reasons: a.reasons });
        }
      }),
      { numRuns: 2000, seed: 16 },
    );
  });

  // "The controller never takes a tenant below its floor": whatever coefficients it can set, a
  // governed queue's job within its unused nominal is admitted — at once, or by reclaim.
  it('never takes a tenant below its floor (core scheduler, 2–4 governed queues)', () => {
    // inference-critical is never preempted: it runs only within its queue's nominal, so it cannot hold a
    // lender's floor.
    const CLASSES = ['inference-critical', 'production', 'training', 'experiment'];
    const worldArb = fc.record({
      queues: fc.array(
        fc.record({
          policy: fc.constantFrom('dedicated', 'guaranteed', 'elastic', 'elastic', 'best-effort', 'custom'),
          nominal: fc.integer({ min: 0, max: 12 }),
          lend: fc.double({ min: 0, max: 1, noNaN: true }),
          borrow: fc.double({ min: 0, max: 3, noNaN: true }),
        }),
        { minLength: 2, maxLength: 4 },
      ),
      custom: customPolicyArb,
      lenderPick: fc.nat(),
      own: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 2 }),
      borrowers: fc.array(
        fc.record({
          pick: fc.nat(),
          gpu: fc.constantFrom(1, 1, 2),
          pods: fc.integer({ min: 1, max: 3 }),
          priority: fc.constantFrom(...CLASSES),
        }),
        { minLength: 4, maxLength: 16 },
      ),
      lenderPods: fc.integer({ min: 1, max: 12 }),
      lenderPriority: fc.constantFrom(...CLASSES),
      fairSharing: fc.boolean(),
    });
    const stats = { cases: 0, reclaimed: 0 };
    fc.assert(
      fc.property(worldArb, (w) => {
        const policies = new Map([...POLICIES, ['custom', w.custom]]);
        const lenderIdx = w.lenderPick % w.queues.length;
        const lenderPolicy = policies.get(w.queues[lenderIdx]!.policy)!;
        // The lender needs a floor: some nominal, and a level that keeps it (best-effort has none).
        fc.pre(lenderPolicy.level !== 'BEST_EFFORT' && w.queues[lenderIdx]!.nominal > 0);
        const clock = new ManualClock();
        const s = new Scheduler({ clock, fairSharing: { enabled: w.fairSharing } });
        for (const f of FLAVORS) s.upsertFlavor(f);
        // Exactly the cohort's nominal in 8-GPU nodes (a last, smaller node for the rest); a
        // DEDICATED queue runs only on nodes dedicated to its tenant, so it gets its own.
        const addNodes = (prefix: string, gpus: number, tenant?: string): void => {
          for (let i = 0; i * 8 < gpus; i++) {
            const n = makeNode(`${prefix}-${i}`).gpus(Math.min(8, gpus - i * 8));
            s.upsertNode((tenant ? n.dedicatedTo(tenant) : n).build());
          }
        };
        const dedicated = (q: (typeof w.queues)[number]): boolean =>
          policies.get(q.policy)!.level === 'DEDICATED';
        w.queues.forEach((q, i) => dedicated(q) && addNodes(`d${i}`, q.nominal, `t-q${i}`));
        addNodes(
          'shared',
          w.queues.reduce((n, q) => n + (dedicated(q) ? 0 : q.nominal), 0),
        );
        s.upsertCohort({ name: 'c' });
        w.queues.forEach((q, i) => {
          const policy = policies.get(q.policy)!;
          const spec: QueueSpec = {
            name: `q${i}`,
            tenant: `t-q${i}`,
            cohort: 'c',
            quotas: { h100: { gpu: { nominal: q.nominal } } },
          };
          s.upsertQueue(applyPolicy(spec, policy, clampSetting(policy, { lend: q.lend, borrow: q.borrow })));
        });
        const lender = `q${lenderIdx}`;
        const others = w.queues.map((_, i) => `q${i}`).filter((q) => q !== lender);
        // A job larger than any node its queue may use is refused at submit (REQUEST_TOO_LARGE): skip it.
        const trySubmit = (job: JobSpec): void => {
          try {
            s.submit(job);
          } catch (e) {
            if (!(e instanceof SchedulerInputError)) throw e;
          }
        };
        w.own.forEach((g, i) =>
          trySubmit(makeJob(`own-${i}`).queue(lender).gpus(g).priority('training').build()),
        );
        w.borrowers.forEach((b, i) =>
          trySubmit(
            makeJob(`b-${i}`)
              .queue(others[b.pick % others.length]!)
              .gpus(b.gpu)
              .pods(b.pods)
              .priority(b.priority)
              .build(),
          ),
        );
        for (let i = 0; i < 3; i++) {
          s.cycle();
          clock.advance(1000);
        }
        // The lender's own pending work (beyond what it holds) is withdrawn: the new job is its head.
        for (let i = 0; i < w.own.length; i++) if (s.jobState(`own-${i}`) === 'pending') s.cancel(`own-${i}`);
        const st = s.queueStatus(lender).resources.find((r) => r.flavor === 'h100' && r.resource === 'gpu')!;
        const unused = st.nominal - st.used;
        fc.pre(unused >= 1);
        const pods = 1 + ((w.lenderPods - 1) % unused);
        s.submit(makeJob('lender-job').queue(lender).gpus(1).pods(pods).priority(w.lenderPriority).build());
        stats.cases++;
        for (let i = 0; i < 4 && s.jobState('lender-job') !== 'admitted'; i++) {
          if (s.cycle().preempted.length > 0) stats.reclaimed++;
          clock.advance(1000);
        }
        expect(
          s.jobState('lender-job'),
          JSON.stringify({ lender, unused, pods, explain: s.explain('lender-job') }),
        ).toBe('admitted');
      }),
      { numRuns: 300, seed: 1616 },
    );
    // The property is not vacuous: many cases ran, and in many the floor came back by reclaim.
    expect(stats.cases).toBeGreaterThan(150);
    expect(stats.reclaimed).toBeGreaterThan(25);
  });
});
