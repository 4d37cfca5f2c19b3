// The ledger bench's data: N running jobs of a few shapes (1-GPU and 8-GPU whole-GPU jobs, MIG
// slices, two-pod-set jobs on two flavors), each admitted and started at T0 with `meteredFrom`
// = T0, in three tenants with a soft budget each (so the writer's budget check has work, as the
// server wires it). Dimensions, flavors, price book and jobs go through the ORM onto a database
// migrated by bench/usage/load.ts's openScratch.
import { createHash } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/core';
import type { Admission, PodSetSpec } from '../../src/core/scheduling/types.js';
import { Flavor, Queue } from '../../src/persistence/cluster/entities.js';
import { uuidv7 } from '../../src/persistence/ids.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { Budget, FlavorPrice, PriceMultiplier } from '../../src/persistence/metering/entities.js';
import { Project, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { Prng } from '../../src/simulator/prng.js';
import { CLASSES, FLAVORS } from '../usage/scenario.js';

/**
 * Jobs start at 10:41:30 UTC on the 28th: the 60-second intervals are off the minute, so those
 * across 11:00 are cut in two rows; the month before can hold rollup history (history.ts).
 */
export const T0 = Date.UTC(2026, 11, 28, 10, 41, 30);

const H100 = FLAVORS[0];
const L40S = FLAVORS[2];
const MIG = FLAVORS[3];

/** How a flavor counts: MIG slices are 1/slicesPerGpu of a device. */
export const slicesOf = (flavor: string): number => FLAVORS.find((f) => f.name === flavor)?.slicesPerGpu ?? 1;

export interface PlannedJob {
  n: number;
  tenant: number;
  project: number | null;
  queue: number;
  user: number;
  priorityClass: string;
  shape: 'gpu-1' | 'gpu-8' | 'mig' | 'two-pod-sets';
  podSets: PodSetSpec[];
  /** Per pod set: the flavor it was admitted on and its pods. */
  admitted: { name: string; flavor: string; count: number }[];
}

export interface LedgerScenario {
  jobs: PlannedJob[];
  tenants: number;
  projects: number;
  queues: number;
  users: number;
}

const pod = (gpu: number) => ({ gpu, cpu: 8000 * Math.max(1, gpu), memory: 65_536 * Math.max(1, gpu) });

export function planJobs(count: number, seed: number): LedgerScenario {
  const rng = new Prng(seed);
  const s = { tenants: 3, projects: 6, queues: 2, users: 60 };
  const jobs: PlannedJob[] = [];
  for (let n = 0; n < count; n++) {
    const r = rng.next();
    let shape: PlannedJob['shape'];
    let podSets: PodSetSpec[];
    let admitted: PlannedJob['admitted'];
    if (r < 0.45) {
      shape = 'gpu-1';
      podSets = [{ name: 'main', count: 1, perPod: pod(1), flavors: [H100.name] }];
      admitted = [{ name: 'main', flavor: H100.name, count: 1 }];
    } else if (r < 0.7) {
      shape = 'gpu-8';
      const pods = rng.next() < 0.7 ? 1 : 2;
      podSets = [{ name: 'main', count: pods, perPod: pod(8), flavors: [H100.name] }];
      admitted = [{ name: 'main', flavor: H100.name, count: pods }];
    } else if (r < 0.85) {
      shape = 'mig';
      podSets = [
        {
          name: 'main',
          count: 1,
          perPod: { gpu: 1 + rng.int(3), cpu: 2000, memory: 16_384 },
          flavors: [MIG.name],
        },
      ];
      admitted = [{ name: 'main', flavor: MIG.name, count: 1 }];
    } else {
      // A launcher on an L40S beside 8-GPU workers: two pod sets on two flavors (two rows per interval).
      shape = 'two-pod-sets';
      const workers = 1 + rng.int(2);
      podSets = [
        { name: 'launcher', count: 1, perPod: pod(1), flavors: [L40S.name] },
        { name: 'workers', count: workers, perPod: pod(8), flavors: [H100.name] },
      ];
      admitted = [
        { name: 'launcher', flavor: L40S.name, count: 1 },
        { name: 'workers', flavor: H100.name, count: workers },
      ];
    }
    const tenant = rng.next() < 0.8 ? 0 : 1 + rng.int(2);
    jobs.push({
      n,
      tenant,
      shape,
      podSets,
      admitted,
      project: rng.next() < 0.1 ? null : rng.int(s.projects),
      queue: rng.int(s.queues),
      user: rng.int(s.users),
      priorityClass: CLASSES[rng.int(CLASSES.length)]!.name,
    });
  }
  return { jobs, ...s };
}

/** Flavor units held per flavor (what the ledger charges per second). */
export function unitsByFlavor(job: PlannedJob): Map<string, number> {
  const out = new Map<string, number>();
  for (const a of job.admitted) {
    const spec = job.podSets.find((p) => p.name === a.name)!;
    out.set(a.flavor, (out.get(a.flavor) ?? 0) + a.count * (spec.perPod.gpu ?? 0));
  }
  return out;
}

export interface SeededIds {
  /** In plan order. */
  jobs: string[];
  tenants: string[];
  projects: string[][];
  queues: string[][];
  users: string[];
}

/** Seeds the scenario. */
export async function seedLedgerScenario(orm: MikroORM, scenario: LedgerScenario): Promise<SeededIds> {
  const em = systemEntityManager(orm);
  const tenants: string[] = [];
  const projects: string[][] = [];
  const queues: { id: string; name: string }[][] = [];
  const users: string[] = [];
  await em.transactional(async (tx) => {
    for (const f of FLAVORS) {
      tx.create(Flavor, {
        id: uuidv7(),
        name: f.name,
        kind: f.slicesPerGpu > 1 ? 'mig' : 'gpu',
        gpuModel: null,
        slicesPerGpu: f.slicesPerGpu > 1 ? f.slicesPerGpu : null,
        pricePerUnitHour: f.price,
      });
      tx.create(FlavorPrice, {
        id: uuidv7(),
        flavor: f.name,
        pricePerUnitHour: f.price,
        effectiveFrom: new Date(0),
      });
    }
    for (const c of CLASSES)
      tx.create(PriceMultiplier, {
        id: uuidv7(),
        priorityClass: c.name,
        multiplier: c.multiplier,
        effectiveFrom: new Date(0),
      });
    for (let u = 0; u < scenario.users; u++)
      users.push(
        tx.create(User, {
          id: uuidv7(),
          email: `ledger${u}@bench.example`,
          name: `User ${u}`,
          isPlatformAdmin: false,
          externalId: null,
        }).id,
      );
    for (let t = 0; t < scenario.tenants; t++) {
      const tenant = tx.create(Tenant, {
        id: uuidv7(),
        slug: `ledger-${t}`,
        name: `Ledger tenant ${t}`,
        status: 'ACTIVE',
        projectsOpen: false,
      });
      tenants.push(tenant.id);
      queues.push(
        Array.from({ length: scenario.queues }, (_, q) => {
          const name = `ledger-${t}-q${q}`;
          return {
            id: tx.create(Queue, {
              id: uuidv7(),
              name,
              tenant,
              cohort: null,
              quotas: {},
              weight: 1,
              queueingStrategy: 'BestEffortFIFO',
              preemption: {},
              isolationLevel: null,
              timeWindows: [],
              dedicatedPool: null,
            }).id,
            name,
          };
        }),
      );
      projects.push(
        Array.from(
          { length: scenario.projects },
          (_, p) =>
            tx.create(Project, {
              id: uuidv7(),
              tenant,
              slug: `p${p}`,
              name: `Project ${p}`,
              status: 'ACTIVE',
              archivedAt: null,
              defaultQueueId: null,
            }).id,
        ),
      );
      // Soft, and far above what the bench spends: evaluated once per checkpoint, never alerting.
      tx.create(Budget, {
        id: uuidv7(),
        tenant,
        project: null,
        scopeKey: 'tenant',
        monthlyAmount: 1e12,
        thresholds: [50, 80, 100],
        hard: false,
        exemptPriorityClasses: ['inference-critical'],
      });
    }
  });
  const ids: string[] = [];
  // In chunks: one flush of thousands of new entities is slow in the unit of work.
  for (let i = 0; i < scenario.jobs.length; i += 500) {
    const tx = systemEntityManager(orm);
    for (const job of scenario.jobs.slice(i, i + 500)) {
      const id = uuidv7(T0);
      const queue = queues[job.tenant]![job.queue]!;
      const admission: Admission = {
        jobId: id,
        queue: queue.name,
        at: T0 - 1000,
        borrowed: false,
        mode: 'fit',
        podSets: job.admitted.map((a) => ({
          name: a.name,
          flavor: a.flavor,
          count: a.count,
          placements: [{ node: `node-${job.n % 250}`, pods: a.count }],
        })),
      };
      tx.create(Job, {
        id,
        tenant: tenants[job.tenant]!,
        project: job.project === null ? null : projects[job.tenant]![job.project]!,
        queue: queue.id,
        submittedBy: users[job.user]!,
        name: `ledger-${job.n}`,
        priorityClass: job.priorityClass,
        podSets: job.podSets,
        expectedDurationMs: 3_600_000,
        maxRunMs: null,
        workload: null,
        state: 'RUNNING',
        admission,
        idempotencyKey: null,
        requestHash: createHash('sha256').update(`ledger-${job.n}`).digest('hex'),
        submitTime: T0 - 2000,
        gpusRequested: [...unitsByFlavor(job).entries()].reduce((a, [f, u]) => a + u / slicesOf(f), 0),
        preemptionCount: 0,
        meteredFrom: T0,
        exitReason: null,
        submittedAt: new Date(T0 - 2000),
        admittedAt: new Date(T0 - 1000),
        startedAt: new Date(T0),
        finishedAt: null,
      });
      ids.push(id);
    }
    await tx.flush();
  }
  return { jobs: ids, tenants, projects, queues: queues.map((q) => q.map((x) => x.id)), users };
}
