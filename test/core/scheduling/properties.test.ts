// Property tests over random clusters and job streams.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Admission,
  type CycleResult,
  type JobSpec,
  type NodeSpec,
  type QueueSpec,
  Scheduler,
  SchedulerInputError,
  type SchedulerOptions,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock } from '../builders.js';

const RUNS = { numRuns: 120 };

interface World {
  nodes: NodeSpec[];
  cohorts: { name: string; parent?: string }[];
  queues: QueueSpec[];
  fairSharing: boolean;
  placement: 'best-fit' | 'fragmentation-aware';
}

type Op =
  | {
      kind: 'submit';
      queue: number;
      gpu: number;
      pods: number;
      minPods: number;
      priority: string;
      flavor: number;
    }
  | { kind: 'finish'; pick: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'cycle' }
  | { kind: 'advance'; ms: number };

const policyArb = fc.record({
  withinQueue: fc.constantFrom('Never', 'LowerPriority', 'LowerOrNewerEqualPriority' as const),
  reclaimWithinCohort: fc.constantFrom('Never', 'LowerPriority', 'Any' as const),
  borrowWithinCohort: fc.option(
    fc.record({
      policy: fc.constantFrom('Never', 'LowerPriority' as const),
      maxPriorityThreshold: fc.option(fc.constantFrom(10, 100, 500), { nil: undefined }),
    }),
    { nil: undefined },
  ),
});

const worldArb: fc.Arbitrary<World> = fc
  .record({
    nodes: fc.array(
      fc.record({
        flavor: fc.constantFrom('h100', 'h100', 'a100-1g'),
        gpus: fc.integer({ min: 1, max: 8 }),
        dedicated: fc.boolean(),
      }),
      { minLength: 1, maxLength: 8 },
    ),
    nested: fc.boolean(),
    queues: fc.array(
      fc.record({
        cohort: fc.integer({ min: 0, max: 2 }),
        h100: fc.integer({ min: 0, max: 12 }),
        mig: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
        borrowingLimit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
        lendingLimit: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
        weight: fc.constantFrom(0, 1, 1, 2),
        strict: fc.boolean(),
        preemption: policyArb,
      }),
      { minLength: 1, maxLength: 5 },
    ),
    fairSharing: fc.boolean(),
    placement: fc.constantFrom('best-fit', 'fragmentation-aware' as const),
  })
  .map((w) => ({
    nodes: w.nodes.map((n, i) => ({
      name: `n${i}`,
      pool: 'default',
      flavor: n.flavor,
      gpus: n.gpus,
      cpu: 64_000,
      memory: 256_000,
      ...(n.dedicated && i === 0 ? { dedicatedTenant: 't0' } : {}),
    })),
    cohorts: w.nested
      ? [{ name: 'root' }, { name: 'c1', parent: 'root' }, { name: 'c2', parent: 'root' }]
      : [{ name: 'c1' }, { name: 'c2' }],
    queues: w.queues.map((q, i) => {
      const spec: QueueSpec = {
        name: `q${i}`,
        tenant: `t${i}`,
        quotas: {
          h100: {
            gpu: {
              nominal: q.h100,
              ...(q.borrowingLimit !== undefined ? { borrowingLimit: q.borrowingLimit } : {}),
              ...(q.lendingLimit !== undefined ? { lendingLimit: q.lendingLimit } : {}),
            },
          },
          ...(q.mig !== undefined ? { 'a100-1g': { gpu: { nominal: q.mig } } } : {}),
        },
        weight: q.weight,
        queueingStrategy: q.strict ? 'StrictFIFO' : 'BestEffortFIFO',
        preemption: JSON.parse(JSON.stringify(q.preemption)) as QueueSpec['preemption'] & object,
      };
      if (q.cohort > 0) spec.cohort = `c${q.cohort}`;
      return spec;
    }),
    fairSharing: w.fairSharing,
    placement: w.placement,
  }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(),
      gpu: fc.constantFrom(0.25, 0.5, 1, 1, 2, 3, 4, 8),
      pods: fc.integer({ min: 1, max: 3 }),
      minPods: fc.integer({ min: 1, max: 3 }),
      priority: fc.constantFrom('inference-critical', 'production', 'training', 'experiment'),
      flavor: fc.nat(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600_000 }) }),
  },
);

function build(w: World, clock: ManualClock): Scheduler {
  const opts: SchedulerOptions = {
    clock,
    placement: w.placement,
    fairSharing: { enabled: w.fairSharing, usageHalfLifeMs: 600_000 },
  };
  const s = new Scheduler(opts);
  for (const f of FLAVORS) s.upsertFlavor(f);
  for (const n of w.nodes) s.upsertNode(n);
  for (const c of w.cohorts) s.upsertCohort(c);
  for (const q of w.queues) s.upsertQueue(q);
  return s;
}

/** Runs ops, keeping an independent model of running jobs from the decisions returned. */
function run(
  w: World,
  ops: Op[],
  onCycle?: (
    s: Scheduler,
    r: CycleResult,
    running: Map<string, { job: JobSpec; admission: Admission }>,
  ) => void,
) {
  const clock = new ManualClock();
  const s = build(w, clock);
  const running = new Map<string, { job: JobSpec; admission: Admission }>();
  const live = new Map<string, JobSpec>();
  const trace: unknown[] = [];
  let seq = 0;
  for (const op of ops) {
    if (op.kind === 'submit') {
      const q = w.queues[op.queue % w.queues.length]!;
      const flavors = Object.keys(q.quotas);
      const job: JobSpec = {
        id: `j${seq++}`,
        tenant: q.tenant,
        queue: q.name,
        priorityClass: op.priority,
        submitTime: clock.now(),
        podSets: [
          {
            name: 'main',
            count: op.pods,
            minCount: Math.min(op.minPods, op.pods),
            perPod: { gpu: op.gpu, cpu: 1000 },
            flavors: [
              flavors[op.flavor % flavors.length]!,
              ...flavors.filter((_, i) => i !== op.flavor % flavors.length),
            ],
          },
        ],
        expectedDurationMs: 600_000,
      };
      try {
        s.submit(job);
        live.set(job.id, job);
        trace.push(['submit', job.id]);
      } catch (e) {
        if (!(e instanceof SchedulerInputError)) throw e;
        trace.push(['rejected', job.id, e.code]);
      }
    } else if (op.kind === 'finish' || op.kind === 'cancel') {
      const ids = [...live.keys()];
      if (ids.length === 0) continue;
      const id = ids[op.pick % ids.length]!;
      s[op.kind](id);
      live.delete(id);
      running.delete(id);
      trace.push([op.kind, id]);
    } else if (op.kind === 'advance') {
      clock.advance(op.ms);
    } else {
      const r = s.cycle();
      for (const a of r.admitted) running.set(a.jobId, { job: live.get(a.jobId)!, admission: a });
      for (const p of r.preempted) running.delete(p.victimId);
      trace.push(r);
      onCycle?.(s, r, running);
    }
  }
  return { s, trace, running, live };
}

/** Independent check of node capacity from the admissions alone. */
function checkCapacity(
  w: World,
  running: Map<string, { job: JobSpec; admission: Admission }>,
  s: Scheduler,
): void {
  const perGpu = new Map<string, number[]>();
  const cpu = new Map<string, number>();
  for (const n of w.nodes) {
    const f = FLAVORS.find((x) => x.name === n.flavor)!;
    perGpu.set(n.name, new Array<number>(n.gpus).fill(f.kind === 'gpu' ? 1000 : f.slicesPerGpu! * 1000));
    cpu.set(n.name, n.cpu);
  }
  for (const { job, admission } of running.values()) {
    for (const ps of admission.podSets) {
      const spec = job.podSets.find((p) => p.name === ps.name)!;
      const g = Math.round((spec.perPod.gpu ?? 0) * 1000);
      const frac = ps.flavor === 'h100' && g < 1000;
      expect(ps.count).toBeLessThanOrEqual(spec.count);
      expect(ps.count).toBeGreaterThanOrEqual(spec.minCount ?? spec.count);
      expect(ps.placements.reduce((n, p) => n + p.pods, 0)).toBe(ps.count);
      for (const pl of ps.placements) {
        const node = w.nodes.find((n) => n.name === pl.node)!;
        expect(node.flavor).toBe(ps.flavor);
        if (node.dedicatedTenant) expect(job.tenant).toBe(node.dedicatedTenant);
        const gpus = perGpu.get(pl.node)!;
        const idx = pl.gpuIndices ?? [];
        expect(idx.length).toBe(g === 0 ? 0 : frac ? pl.pods : (g / 1000) * pl.pods);
        for (const i of idx) gpus[i] = gpus[i]! - (frac ? g : 1000);
        cpu.set(pl.node, cpu.get(pl.node)! - 1000 * pl.pods);
      }
    }
  }
  const status = s.nodeStatus();
  for (const [name, gpus] of perGpu) {
    for (const f of gpus) expect(f).toBeGreaterThanOrEqual(0);
    expect(cpu.get(name)!).toBeGreaterThanOrEqual(0);
    // and the scheduler's own counters agree with the admissions
    expect(status.find((n) => n.name === name)!.gpus.map((g) => Math.round(g.free * 1000))).toEqual(gpus);
  }
}

/** Per queue and flavor: usage ≤ nominal + borrowingLimit (≤ nominal without a cohort); per tree: usage ≤
 * the sum of nominals.
 */
function checkQuota(
  w: World,
  running: Map<string, { job: JobSpec; admission: Admission }>,
  s: Scheduler,
): void {
  const used = new Map<string, number>();
  for (const { job, admission } of running.values())
    for (const ps of admission.podSets) {
      const g = Math.round((job.podSets.find((p) => p.name === ps.name)!.perPod.gpu ?? 0) * 1000) * ps.count;
      const k = `${job.queue}/${ps.flavor}`;
      used.set(k, (used.get(k) ?? 0) + g);
    }
  const treeUsed = new Map<string, number>();
  const treeNominal = new Map<string, number>();
  const tree = (q: QueueSpec) =>
    q.cohort === undefined ? q.name : w.cohorts.some((c) => c.name === 'root') ? 'root' : q.cohort;
  for (const q of w.queues) {
    for (const [f, res] of Object.entries(q.quotas)) {
      const u = used.get(`${q.name}/${f}`) ?? 0;
      const lim = res.gpu!;
      const max =
        q.cohort === undefined ? lim.nominal : lim.nominal + (lim.borrowingLimit ?? Number.POSITIVE_INFINITY);
      expect(u).toBeLessThanOrEqual(Math.round(max * 1000));
      const st = s.queueStatus(q.name).resources.find((r) => r.flavor === f && r.resource === 'gpu')!;
      expect(Math.round(st.used * 1000)).toBe(u);
      const k = `${tree(q)}/${f}`;
      treeUsed.set(k, (treeUsed.get(k) ?? 0) + u);
      treeNominal.set(k, (treeNominal.get(k) ?? 0) + lim.nominal * 1000);
    }
  }
  for (const [k, u] of treeUsed) expect(u).toBeLessThanOrEqual(treeNominal.get(k)!);
}

describe('properties', () => {
  it('capacity is never exceeded on any node or flavor, and no queue exceeds nominal + borrowingLimit', () => {
    fc.assert(
      fc.property(worldArb, fc.array(opArb, { minLength: 5, maxLength: 40 }), (w, ops) => {
        run(w, [...ops, { kind: 'cycle' }], (s, _r, running) => {
          checkCapacity(w, running, s);
          checkQuota(w, running, s);
        });
      }),
      RUNS,
    );
  });

  it('the same inputs give the same decisions', () => {
    fc.assert(
      fc.property(worldArb, fc.array(opArb, { minLength: 5, maxLength: 40 }), (w, ops) => {
        const a = run(w, [...ops, { kind: 'cycle' }]);
        const b = run(w, [...ops, { kind: 'cycle' }]);
        expect(b.trace).toEqual(a.trace);
        const ids = [...a.live.keys()];
        expect(ids.map((id) => b.s.explain(id))).toEqual(ids.map((id) => a.s.explain(id)));
      }),
      { numRuns: 80 },
    );
  });

  it('a what-if leaves the snapshot unchanged', () => {
    fc.assert(
      fc.property(
        worldArb,
        fc.array(opArb, { minLength: 5, maxLength: 30 }),
        fc.array(
          opArb.filter((o) => o.kind === 'submit'),
          { minLength: 1, maxLength: 4 },
        ),
        (w, ops, probes) => {
          const { s } = run(w, [...ops, { kind: 'cycle' }]);
          for (const [i, p] of probes.entries()) {
            if (p.kind !== 'submit') continue;
            const q = w.queues[p.queue % w.queues.length]!;
            const before = s.debugState();
            try {
              s.preview({
                id: `probe${i}`,
                tenant: q.tenant,
                queue: q.name,
                priorityClass: p.priority,
                submitTime: 0,
                podSets: [{ name: 'main', count: p.pods, perPod: { gpu: p.gpu } }],
              });
            } catch (e) {
              if (!(e instanceof SchedulerInputError)) throw e;
            }
            expect(s.debugState()).toEqual(before);
          }
        },
      ),
      RUNS,
    );
  });

  it('no two jobs preempt each other back and forth, and cycles settle', () => {
    fc.assert(
      fc.property(
        worldArb,
        fc.array(
          opArb.filter((o) => o.kind === 'submit'),
          { minLength: 3, maxLength: 30 },
        ),
        (w, submits) => {
          const ops: Op[] = [];
          // Interleave cycles so jobs get admitted before others arrive and preempt them.
          submits.forEach((o, i) => ops.push(o, ...(i % 3 === 2 ? [{ kind: 'cycle' as const }] : [])));
          for (let i = 0; i < 8; i++) ops.push({ kind: 'cycle' });
          const pairs = new Set<string>();
          const { trace } = run(w, ops, (_s, r) => {
            for (const p of r.preempted) {
              expect(pairs.has(`${p.preemptorId}>${p.victimId}`)).toBe(false);
              pairs.add(`${p.victimId}>${p.preemptorId}`);
            }
          });
          const last = trace[trace.length - 1] as CycleResult;
          expect(last.admitted).toEqual([]);
          expect(last.preempted).toEqual([]);
        },
      ),
      RUNS,
    );
  });

  it('a queue at or under its nominal gets a job that fits its nominal admitted in the same cycle when reclaim can free it', () => {
    // Cluster capacity = sum of nominals, single-GPU pods (no fragmentation), every other job preemptible,
    // reclaim Any everywhere: whatever is missing is borrowed by queues above their nominal.
    const arb = fc.record({
      nominals: fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 2, maxLength: 5 }),
      jobs: fc.array(
        fc.record({
          queue: fc.nat(),
          pods: fc.integer({ min: 1, max: 6 }),
          priority: fc.constantFrom('production', 'training', 'experiment'),
        }),
        { maxLength: 30 },
      ),
      probeQueue: fc.nat(),
      probeSize: fc.nat(),
      fairSharing: fc.boolean(),
      strict: fc.boolean(),
    });
    fc.assert(
      fc.property(arb, ({ nominals, jobs, probeQueue, probeSize, fairSharing, strict }) => {
        const total = nominals.reduce((a, b) => a + b, 0);
        if (total === 0) return;
        const clock = new ManualClock();
        const s = new Scheduler({ clock, fairSharing: { enabled: fairSharing } });
        s.upsertFlavor(FLAVORS[0]!);
        for (let i = 0, left = total; left > 0; i++, left -= 8)
          s.upsertNode({
            name: `n${i}`,
            pool: 'p',
            flavor: 'h100',
            gpus: Math.min(8, left),
            cpu: 1e6,
            memory: 1e6,
          });
        s.upsertCohort({ name: 'c' });
        nominals.forEach((n, i) =>
          s.upsertQueue({
            name: `q${i}`,
            tenant: `t${i}`,
            cohort: 'c',
            quotas: { h100: { gpu: { nominal: n } } },
            preemption: { reclaimWithinCohort: 'Any' },
            ...(strict ? { queueingStrategy: 'StrictFIFO' as const } : {}),
          }),
        );
        jobs.forEach((j, i) => {
          const q = j.queue % nominals.length;
          s.submit({
            id: `j${i}`,
            tenant: `t${q}`,
            queue: `q${q}`,
            priorityClass: j.priority,
            submitTime: i,
            podSets: [{ name: 'm', count: j.pods, perPod: { gpu: 1 } }],
          });
          if (i % 4 === 3) s.cycle();
        });
        s.cycle();
        const qi = probeQueue % nominals.length;
        const st = s.queueStatus(`q${qi}`).resources[0]!;
        const room = st.nominal - st.used;
        if (room < 1) return;
        const k = 1 + (probeSize % room);
        s.submit({
          id: 'probe',
          tenant: `t${qi}`,
          queue: `q${qi}`,
          priorityClass: 'inference-critical',
          submitTime: 1e9,
          podSets: [{ name: 'm', count: k, perPod: { gpu: 1 } }],
        });
        const r = s.cycle();
        expect(r.admitted.map((a) => a.jobId)).toContain('probe');
        for (const p of r.preempted.filter((x) => x.preemptorId === 'probe'))
          expect(p.victimQueue).not.toBe(`q${qi}`);
      }),
      { numRuns: 200 },
    );
  });
});
