// Test builders for the scheduler core: short, readable cluster and job descriptions.
import {
  type CohortSpec,
  type FlavorSpec,
  type IsolationLevel,
  type JobSpec,
  type NodeSpec,
  type PodSetSpec,
  type PreemptionSpec,
  type QueueSpec,
  type QuotaSpec,
  type ResourceName,
  Scheduler,
  type SchedulerOptions,
  type TimeWindowSpec,
} from '../../src/core/scheduling/index.js';

export class ManualClock {
  constructor(public t = Date.UTC(2026, 0, 5, 12, 0)) {} // a Monday, 12:00 UTC
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export class QueueBuilder {
  private spec: QueueSpec;
  private last: { flavor: string; resource: ResourceName } | null = null;
  constructor(name: string) {
    this.spec = { name, tenant: `t-${name}`, quotas: {} };
  }
  tenant(t: string): this {
    this.spec.tenant = t;
    return this;
  }
  cohort(c: string): this {
    this.spec.cohort = c;
    return this;
  }
  nominal(flavor: string, n: number, resource: ResourceName = 'gpu'): this {
    const f = (this.spec.quotas[flavor] ??= {});
    f[resource] = { ...(f[resource] ?? {}), nominal: n };
    this.last = { flavor, resource };
    return this;
  }
  borrowingLimit(n: number): this {
    const l = this.current();
    l.borrowingLimit = n;
    return this;
  }
  lendingLimit(n: number): this {
    const l = this.current();
    l.lendingLimit = n;
    return this;
  }
  private current(): { nominal: number; borrowingLimit?: number; lendingLimit?: number } {
    if (!this.last) throw new Error('call nominal() first');
    return this.spec.quotas[this.last.flavor]![this.last.resource]!;
  }
  weight(w: number): this {
    this.spec.weight = w;
    return this;
  }
  strictFIFO(): this {
    this.spec.queueingStrategy = 'StrictFIFO';
    return this;
  }
  preemption(p: PreemptionSpec): this {
    this.spec.preemption = p;
    return this;
  }
  reclaim(p: 'Never' | 'LowerPriority' | 'Any'): this {
    this.spec.preemption = { ...(this.spec.preemption ?? {}), reclaimWithinCohort: p };
    return this;
  }
  withinQueue(p: 'Never' | 'LowerPriority' | 'LowerOrNewerEqualPriority'): this {
    this.spec.preemption = { ...(this.spec.preemption ?? {}), withinQueue: p };
    return this;
  }
  isolation(i: IsolationLevel): this {
    this.spec.isolation = i;
    return this;
  }
  dedicatedPool(p: string): this {
    this.spec.dedicatedPool = p;
    return this;
  }
  window(w: TimeWindowSpec): this {
    (this.spec.timeWindows ??= []).push(w);
    return this;
  }
  build(): QueueSpec {
    return JSON.parse(JSON.stringify(this.spec)) as QueueSpec;
  }
}
export const makeQueue = (name: string): QueueBuilder => new QueueBuilder(name);

let jobSeq = 0;
export class JobBuilder {
  private spec: JobSpec;
  private tenantSet = false;
  constructor(id?: string) {
    jobSeq++;
    this.spec = {
      id: id ?? `job-${String(jobSeq).padStart(5, '0')}`,
      tenant: 't-a',
      queue: 'a',
      priorityClass: 'training',
      submitTime: 1000 + jobSeq,
      podSets: [{ name: 'main', count: 1, perPod: { gpu: 1 } }],
    };
  }
  id(id: string): this {
    this.spec.id = id;
    return this;
  }
  queue(q: string): this {
    this.spec.queue = q;
    if (!this.tenantSet) this.spec.tenant = `t-${q}`;
    return this;
  }
  tenant(t: string): this {
    this.spec.tenant = t;
    this.tenantSet = true;
    return this;
  }
  private main(): PodSetSpec {
    return this.spec.podSets[0]!;
  }
  gpus(n: number): this {
    this.main().perPod.gpu = n;
    return this;
  }
  cpu(n: number): this {
    this.main().perPod.cpu = n;
    return this;
  }
  memory(n: number): this {
    this.main().perPod.memory = n;
    return this;
  }
  pods(count: number, minCount?: number): this {
    this.main().count = count;
    if (minCount !== undefined) this.main().minCount = minCount;
    return this;
  }
  flavors(...f: string[]): this {
    this.main().flavors = f;
    return this;
  }
  podSet(ps: PodSetSpec): this {
    this.spec.podSets.push(ps);
    return this;
  }
  priority(pc: string): this {
    this.spec.priorityClass = pc;
    return this;
  }
  submittedAt(t: number): this {
    this.spec.submitTime = t;
    return this;
  }
  duration(ms: number): this {
    this.spec.expectedDurationMs = ms;
    return this;
  }
  build(): JobSpec {
    return JSON.parse(JSON.stringify(this.spec)) as JobSpec;
  }
}
export const makeJob = (id?: string): JobBuilder => new JobBuilder(id);

export class NodeBuilder {
  private spec: NodeSpec;
  constructor(name: string) {
    this.spec = { name, pool: 'default', flavor: 'h100', gpus: 8, cpu: 64_000, memory: 512_000 };
  }
  flavor(f: string): this {
    this.spec.flavor = f;
    return this;
  }
  gpus(n: number): this {
    this.spec.gpus = n;
    return this;
  }
  cpu(n: number): this {
    this.spec.cpu = n;
    return this;
  }
  memory(n: number): this {
    this.spec.memory = n;
    return this;
  }
  pool(p: string): this {
    this.spec.pool = p;
    return this;
  }
  dedicatedTo(t: string): this {
    this.spec.dedicatedTenant = t;
    return this;
  }
  build(): NodeSpec {
    return { ...this.spec };
  }
}
export const makeNode = (name: string): NodeBuilder => new NodeBuilder(name);

export const FLAVORS: FlavorSpec[] = [
  { name: 'h100', kind: 'gpu', gpuModel: 'H100' },
  { name: 'a100', kind: 'gpu', gpuModel: 'A100' },
  { name: 'a100-1g', kind: 'mig', gpuModel: 'A100', slicesPerGpu: 7 },
  { name: 'l4-ts', kind: 'timeslice', gpuModel: 'L4', slicesPerGpu: 4 },
];

export interface ClusterSetup {
  nodes?: (NodeBuilder | NodeSpec)[];
  cohorts?: CohortSpec[];
  queues: (QueueBuilder | QueueSpec)[];
  options?: Partial<SchedulerOptions>;
  clock?: ManualClock;
}

/** A scheduler with the standard flavors, then the given nodes, cohorts (created from queue references if
 * not given) and queues.
 */
export function makeCluster(setup: ClusterSetup): { s: Scheduler; clock: ManualClock } {
  const clock = setup.clock ?? new ManualClock();
  const s = new Scheduler({ clock, ...(setup.options ?? {}) });
  for (const f of FLAVORS) s.upsertFlavor(f);
  for (const n of setup.nodes ?? []) s.upsertNode(n instanceof NodeBuilder ? n.build() : n);
  const queues = setup.queues.map((q) => (q instanceof QueueBuilder ? q.build() : q));
  const cohorts =
    setup.cohorts ??
    [...new Set(queues.flatMap((q) => (q.cohort ? [q.cohort] : [])))].map((name) => ({ name }));
  for (const c of cohorts) s.upsertCohort(c);
  for (const q of queues) s.upsertQueue(q);
  return { s, clock };
}

/** n nodes of a flavor, named prefix-0..n-1. */
export function nodes(n: number, flavor = 'h100', gpus = 8, prefix = flavor): NodeBuilder[] {
  return Array.from({ length: n }, (_, i) => makeNode(`${prefix}-${i}`).flavor(flavor).gpus(gpus));
}

export function submitAll(s: Scheduler, jobs: (JobBuilder | JobSpec)[]): JobSpec[] {
  return jobs.map((j) => {
    const spec = j instanceof JobBuilder ? j.build() : j;
    s.submit(spec);
    return spec;
  });
}

export const admittedIds = (r: { admitted: { jobId: string }[] }): string[] =>
  r.admitted.map((a) => a.jobId).sort();
export type { QuotaSpec };
