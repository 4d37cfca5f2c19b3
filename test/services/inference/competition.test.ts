// Two tenants' services in one cohort, both asking for more replicas than the cohort's idle GPUs
// allow: the autoscaler runs interval after interval and the scheduler splits the idle GPUs by the
// fair-share rules (docs: /work/shared/design/scheduling.md). Each interval's admitted replicas are
// what those rules give for what each service asks then; once the split settles nothing moves.
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

// The autoscaler's period: a minute of the harness clock per interval (its own timer, a real minute, never
// fires within the test: the test runs each interval itself).
const INTERVAL_MS = 60_000;
const INTERVALS = 16;
/** The last intervals, load steady, in which nothing may move any more. */
const STEADY = 10;
const GPUS_PER_REPLICA = 2;
const TARGET = 10; // req/s per replica

const CREATE = `mutation($input: CreateInferenceServiceInput!) { createInferenceService(input: $input) { id } }`;
const READ = `query($id: ID!) { inferenceService(id: $id) {
  replicas { desired admitted ready pending minimum }
  replicaJobs { id state borrowed gpus preemptionCount pendingReason { code }
    events(first: 20) { edges { node { type reason } } } }
  lastDecision { at desired recommended admitted ready whyNotMore signalValue }
  scalingEvents(first: 100) { edges { node {
    at signal signalValue target recommended minimum fromReplicas desired admitted ready whyNotMore } } }
} }`;
const QUEUES = `{ queues { name weight cohortName weightedShare
  usage { flavor nominal used borrowed borrowingLimit lendingLimit } } }`;

interface Counts {
  desired: number;
  admitted: number;
  ready: number;
  pending: number;
  minimum: number;
}
interface Snapshot {
  replicas: Counts;
  replicaJobs: {
    id: string;
    state: string;
    borrowed: boolean;
    gpus: number;
    preemptionCount: number;
    pendingReason: { code: string } | null;
    events: { edges: { node: { type: string; reason: string | null } }[] };
  }[];
  lastDecision: { at: string; desired: number; admitted: number; ready: number } | null;
  scalingEvents: { edges: { node: ScalingEvent }[] };
}
interface ScalingEvent {
  at: string;
  signal: string;
  signalValue: number;
  target: number;
  recommended: number;
  minimum: number;
  fromReplicas: number;
  desired: number;
  admitted: number;
  ready: number;
  whyNotMore: string | null;
}
interface QueueLimits {
  name: string;
  nominal: number;
  /** In force (the isolation level's knob applied); null: no limit. */
  borrowingLimit: number | null;
  weight: number;
}

/**
 * GPUs each queue holds when it asks for `demand` GPUs, by the design's rules, in whole replicas:
 * 1. a queue keeps its nominal up to its demand (a lender reclaims lent nominal at once, and no
 *    queue is pushed below its nominal by another's reclaim);
 * 2. what stays idle is lent a replica at a time to the borrower with the lowest weighted share
 *    (borrowed × 1000 / lendable / weight), within nominal + borrowingLimit.
 */
function fairShares(queues: QueueLimits[], demand: number[], unit: number): number[] {
  const lendable = queues.reduce((n, q) => n + q.nominal, 0);
  const held = queues.map((q, i) => Math.min(demand[i]!, Math.floor(q.nominal / unit) * unit));
  let idle = lendable - held.reduce((a, b) => a + b, 0);
  for (;;) {
    const share = (i: number) =>
      (Math.max(0, held[i]! - queues[i]!.nominal) * 1000) / lendable / queues[i]!.weight;
    const can = queues
      .map((_q, i) => i)
      .filter((i) => held[i]! + unit <= demand[i]!)
      .filter((i) => held[i]! + unit <= queues[i]!.nominal + (queues[i]!.borrowingLimit ?? Infinity));
    if (idle < unit || can.length === 0) return held;
    const next = can.sort((a, b) => share(a) - share(b) || a - b)[0]!;
    held[next] = held[next]! + unit;
    idle -= unit;
  }
}

/** Times a series turns from rising to falling or back. */
function reversals(series: number[]): number {
  const moves = series
    .slice(1)
    .map((v, i) => Math.sign(v - series[i]!))
    .filter((d) => d !== 0);
  return moves.slice(1).filter((d, i) => d !== moves[i]).length;
}

describeEachDialect('inference services competing in one cohort', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ dialect, inference: { intervalMs: INTERVAL_MS } });
  });
  afterAll(async () => t?.close());

  it('splits the idle GPUs by the fair-share rules, settles, and says so in its scaling events', async () => {
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const ada = t.token('aurora-research', 'TENANT_ADMIN');
    // Aurora's replicas get the guaranteed class too (the demo grants it to Borealis only).
    const aurora = (await t.gql(ada, `{ tenant(slug: "aurora-research") { id defaultProject { id } } }`)).body
      .data!.tenant;
    const granted = await t.gql(
      admin,
      `mutation($t: ID!) { grantTenantPriorityClass(tenantId: $t, priorityClass: "inference-critical") { id } }`,
      { t: aurora.id },
    );
    expect(granted.body.errors).toBeUndefined();
    const passed = await t.gql(
      ada,
      `mutation($in: ProjectAccessInput!) { grantProjectAccess(input: $in) { id } }`,
      { in: { projectId: aurora.defaultProject.id, kind: 'PRIORITY_CLASS', name: 'inference-critical' } },
    );
    expect(passed.body.errors).toBeUndefined();

    // The demo cohort "research-pool": 4 nodes × 8 H100 = 32 GPUs, the sum of its two queues' nominal
    // (16 each, weight 1, lendingLimit unset: all idle nominal is lent). Aurora's queue is GUARANTEED:
    // borrowing limit 0 in force, so it never holds more than 16. Borealis's is ELASTIC: no limit.
    const queues = (await t.gql(admin, QUEUES)).body.data!.queues as {
      name: string;
      weight: number;
      cohortName: string;
      usage: {
        flavor: string;
        nominal: number;
        borrowingLimit: number | null;
        lendingLimit: number | null;
      }[];
    }[];
    const limits: QueueLimits[] = ['aurora-training', 'borealis-serving'].map((name) => {
      const q = queues.find((x) => x.name === name)!;
      const h100 = q.usage.find((u) => u.flavor === 'h100-80g')!;
      expect(q.cohortName).toBe('research-pool');
      expect(h100.lendingLimit).toBeNull();
      return { name, nominal: h100.nominal, borrowingLimit: h100.borrowingLimit, weight: q.weight };
    });
    expect(limits).toEqual([
      { name: 'aurora-training', nominal: 16, borrowingLimit: 0, weight: 1 },
      { name: 'borealis-serving', nominal: 16, borrowingLimit: null, weight: 1 },
    ]);

    // Two services of 2 GPUs a replica, 2 guaranteed, flat load: Aurora 120 req/s (12 replicas,
    // 24 GPUs) climbing 4 replicas an interval; Borealis 140 req/s (14 replicas, 28 GPUs) at once.
    // 24 + 28 = 52 GPUs asked of 32; idle once the minima run: 32 − 2 × 2 × 2 = 24.
    const services = [
      { tenant: 'aurora-research', registry: 'registry.aurora.example', rps: 120, step: 4 },
      { tenant: 'borealis-inference', registry: 'registry.borealis.example', rps: 140, step: 14 },
    ].map((s) => ({ ...s, bearer: t.token(s.tenant, 'MEMBER'), id: '' }));
    for (const s of services) {
      const created = await t.gql(s.bearer, CREATE, {
        input: {
          name: 'chat',
          container: { image: `${s.registry}/chat:1` },
          port: 8080,
          replica: { gpusPerPod: GPUS_PER_REPLICA, flavors: ['h100-80g'] },
          minReplicas: 2,
          maxReplicas: 16,
          scaling: {
            signal: 'REQUESTS_PER_SECOND',
            target: TARGET,
            scaleDownStabilizationSeconds: 0,
            maxScaleUpStep: s.step,
          },
          simulatedTraffic: {
            meanRps: s.rps,
            amplitude: 0,
            noise: 0,
            throughputPerReplica: 12,
            serviceP95Ms: 40,
          },
        },
      });
      expect(created.body.errors).toBeUndefined();
      s.id = created.body.data!.createInferenceService.id;
    }
    const read = async (s: (typeof services)[number]): Promise<Snapshot> => {
      const r = await t.gql(s.bearer, READ, { id: s.id });
      if (!r.body.data) throw new Error(JSON.stringify(r.body.errors));
      return r.body.data.inferenceService;
    };
    /** Both services once the cluster is still: every admitted replica serves, every pending one is explained. */
    const settled = async (): Promise<Snapshot[]> => {
      let previous = '';
      let same = 0;
      return vi.waitFor(
        async () => {
          const snaps = await Promise.all(services.map(read));
          for (const { replicas: c, replicaJobs } of snaps) {
            expect(c.ready).toBe(c.admitted);
            expect(c.admitted + c.pending).toBe(c.desired);
            // A pending replica the scheduler has not tried yet says NotYetEvaluated.
            const untried = replicaJobs.filter(
              (j) =>
                j.state === 'PENDING' && (!j.pendingReason || j.pendingReason.code === 'NotYetEvaluated'),
            );
            expect(untried).toEqual([]);
          }
          // …and the same over three reads 50 ms apart (a reclaim in flight shows in between).
          const now = JSON.stringify(snaps.map((s) => s.replicaJobs.map((j) => [j.id, j.state])));
          same = now === previous ? same + 1 : 0;
          previous = now;
          expect(same).toBeGreaterThanOrEqual(2);
          return snaps;
        },
        { timeout: 10_000, interval: 50 },
      );
    };

    const runs: { at: number; before: Snapshot[]; after: Snapshot[] }[] = [];
    let before = await settled();
    for (let i = 0; i < INTERVALS; i++) {
      t.now.value += INTERVAL_MS;
      const at = t.now.value;
      expect(await t.app.scheduler.runLeaderTask('inference-autoscaler')).toBe(true);
      const after = await settled();
      runs.push({ at, before, after });
      before = after;
    }
    const admitted = (k: number) =>
      [runs[0]!.before[k]!, ...runs.map((r) => r.after[k]!)].map((s) => s.replicas.admitted);
    console.log(
      `[competition ${dialect}] admitted per interval: aurora ${admitted(0).join(' ')}; borealis ${admitted(1).join(' ')}`,
    );

    // Each interval: what each service holds is the fair share of what both ask for then.
    // Interval 1: Aurora asks 6 (12 GPUs), Borealis 14 (28): Aurora 12, Borealis its 16 + Aurora's idle 4
    // = 20 (10 replicas, 2 of them borrowed). Interval 2 on: Aurora asks 10, then 12 (20, 24 GPUs; at most
    // 16 with borrowing limit 0) and reclaims its 4: 16 and 16, 8 replicas each, nothing idle, nothing
    // borrowed, both weighted shares 0.
    for (const [n, run] of runs.entries()) {
      const demand = run.after.map((s) => s.replicas.desired * GPUS_PER_REPLICA);
      const fair = fairShares(limits, demand, GPUS_PER_REPLICA);
      const heldGpus = run.after.map((s) =>
        s.replicaJobs.filter((j) => j.state !== 'PENDING').reduce((g, j) => g + j.gpus, 0),
      );
      expect({ interval: n + 1, gpus: heldGpus }).toEqual({ interval: n + 1, gpus: fair });
      const borrowed = run.after[1]!.replicaJobs.filter((j) => j.state !== 'PENDING' && j.borrowed).length;
      expect(borrowed * GPUS_PER_REPLICA).toBe(Math.max(0, fair[1]! - 16));
    }
    // No oscillation: at most one reversal each (Borealis: up on borrowed GPUs, down once reclaimed),
    // and in the last STEADY intervals, load steady, no admitted count, replica or event moves.
    for (const k of [0, 1]) expect(reversals(admitted(k)), services[k]!.tenant).toBeLessThanOrEqual(1);
    const tail = runs.slice(-STEADY);
    for (const [k] of services.entries()) {
      expect(new Set(tail.map((r) => r.after[k]!.replicas.admitted)).size).toBe(1);
      expect(
        new Set(tail.map((r) => r.after[k]!.replicaJobs.map((j) => `${j.id}:${j.state}`).join())).size,
      ).toBe(1);
    }

    expect(runs[0]!.after.map((s) => s.replicas.admitted)).toEqual([6, 10]);
    const last = runs.at(-1)!.after;
    // Both still ask for more than they get (Aurora 12 or, held while refused, 10; Borealis 14).
    for (const s of last) {
      expect(s.replicas).toMatchObject({
        admitted: 8,
        ready: 8,
        pending: s.replicas.desired - 8,
        minimum: 2,
      });
      expect(s.replicas.desired).toBeGreaterThan(8);
    }
    // Neither gets everything: of the 24 idle GPUs each got 12 (6 replicas over its minimum of 2).
    for (const s of last) expect((s.replicas.admitted - s.replicas.minimum) * GPUS_PER_REPLICA).toBe(12);
    const finalQueues = (await t.gql(admin, QUEUES)).body.data!.queues as {
      name: string;
      weightedShare: number;
      usage: { flavor: string; used: number; borrowed: number }[];
    }[];
    for (const q of finalQueues) {
      const h100 = q.usage.find((u) => u.flavor === 'h100-80g')!;
      expect({ q: q.name, used: h100.used, borrowed: h100.borrowed, share: q.weightedShare }).toEqual({
        q: q.name,
        used: 16,
        borrowed: 0,
        share: 0,
      });
    }
    // Borealis's 2 borrowed replicas were reclaimed by Aurora, not by anything else; no other replica was.
    const preempted = last.flatMap((s) => s.replicaJobs.filter((j) => j.preemptionCount > 0));
    expect(preempted).toHaveLength(2);
    for (const j of preempted)
      expect(j.events.edges.map((e) => e.node).filter((e) => e.type === 'PREEMPTED')).toEqual([
        { type: 'PREEMPTED', reason: 'reclaim' },
      ]);

    // The scaling events carry the numbers of the replicas seen at each decision.
    const tailStart = tail[0]!.at;
    for (const [k, s] of services.entries()) {
      const events = last[k]!.scalingEvents.edges.map((e) => e.node);
      const decided = new Set<number>();
      for (const e of events) {
        const at = new Date(e.at).getTime();
        const run = runs.find((r) => r.at === at);
        if (!run) continue; // the creation's decision
        decided.add(at);
        const seen = run.before[k]!.replicas;
        const recommended = Math.ceil(s.rps / TARGET);
        expect(e).toEqual({
          at: e.at,
          signal: 'REQUESTS_PER_SECOND',
          signalValue: s.rps,
          target: TARGET,
          recommended,
          minimum: 2,
          fromReplicas: seen.desired,
          desired: run.after[k]!.replicas.desired,
          admitted: seen.admitted,
          ready: seen.ready,
          // Fewer admitted than desired with a replica waiting: the scheduler's reason, with its numbers
          // (the queue's used GPUs are the replicas held then).
          whyNotMore:
            seen.pending > 0
              ? expect.stringContaining(`requested 2, available 0 (nominal 16, used ${seen.admitted * 2}`)
              : null,
        });
        // Load steady above what runs: never down, up at most a step and never past the recommendation.
        expect(e.desired).toBeGreaterThanOrEqual(e.fromReplicas);
        expect(e.desired).toBeLessThanOrEqual(Math.min(e.fromReplicas + s.step, recommended));
        expect(at).toBeLessThan(tailStart);
      }
      // A decision that moved the desired count always left an event.
      for (const r of runs)
        if (r.after[k]!.replicas.desired !== r.before[k]!.replicas.desired)
          expect(decided.has(r.at)).toBe(true);
      const d = last[k]!.lastDecision!;
      expect(new Date(d.at).getTime()).toBe(runs.at(-1)!.at);
      expect([d.desired, d.admitted, d.ready]).toEqual([
        last[k]!.replicas.desired,
        last[k]!.replicas.admitted,
        last[k]!.replicas.ready,
      ]);
      console.log(
        `[competition ${dialect}] ${s.tenant}: ${events.length} scaling events; last: ${JSON.stringify(events.at(-1))}`,
      );
    }
  }, 60_000);
});
