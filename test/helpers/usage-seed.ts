import type { EntityManager } from '@mikro-orm/core';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { Job, type JobState } from '../../src/persistence/jobs/entities.js';
import { type UsageCloser, UsageHourly, UsageRecord } from '../../src/persistence/metering/entities.js';
import { Membership, Project, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import type { TestApp } from './harness.js';

/**
 * Usage written straight into the ledger and its hourly rollup (as the ledger writer would:
 * one row per job × flavor × hour-bounded interval, the rollup their sums), at times far from
 * the test's clock so the live ledger of running demo jobs never falls into the ranges read.
 */

const HOUR = 3_600_000;
export const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

export interface SeedPeople {
  tenant: Tenant;
  project: Project;
  queue: Queue;
  users: Record<string, User>;
  members: Record<string, Membership>;
}

export async function peopleOf(t: TestApp, slug: string): Promise<SeedPeople> {
  const em = systemEntityManager(t.app.orm).fork({ clear: true });
  const tenant = await em.findOneOrFail(Tenant, { slug });
  const project = await em.findOneOrFail(Project, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
  const queue = await em.findOneOrFail(Queue, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
  const memberships = await em.find(Membership, { tenant: tenant.id }, { populate: ['user'] });
  const users: Record<string, User> = {};
  const members: Record<string, Membership> = {};
  for (const m of memberships) {
    const key = m.user.email.split('@')[0]!;
    users[key] = m.user;
    members[key] = m;
  }
  return { tenant, project, queue, users, members };
}

export interface SeedInterval {
  flavor: string;
  /** ISO start; the interval is `hours` long and is split at hour boundaries. */
  start: string;
  hours: number;
  gpuUnits: number;
  /** Device equivalents per unit (MIG slice: 1/7). */
  devicesPerUnit?: number;
  unitPrice: number;
  /** Mean sampled utilization; null: not measured. */
  utilization: number | null;
  closedBy?: UsageCloser;
  cpuCores?: number;
  memoryGib?: number;
}

export interface SeedJob {
  people: SeedPeople;
  user: string;
  name: string;
  priorityClass: string;
  state: JobState;
  finishedAt?: string | null;
  exitReason?: string | null;
  intervals: SeedInterval[];
}

/** Inserts finished (or running) jobs with their ledger rows and the rollup of those rows. */
export async function seedUsage(t: TestApp, jobs: SeedJob[]): Promise<Job[]> {
  const em = systemEntityManager(t.app.orm).fork({ clear: true });
  const out: Job[] = [];
  const rollup = new Map<string, UsageHourly>();
  await em.transactional(async (tx) => {
    for (const spec of jobs) {
      const { tenant, project, queue } = spec.people;
      const user = spec.people.users[spec.user]!;
      const first = Date.parse(spec.intervals[0]!.start);
      const job = tx.create(Job, {
        tenant: tx.getReference(Tenant, tenant.id),
        project: tx.getReference(Project, project.id),
        queue: tx.getReference(Queue, queue.id),
        submittedBy: tx.getReference(User, user.id),
        name: spec.name,
        priorityClass: spec.priorityClass,
        podSets: [
          {
            name: 'main',
            count: 1,
            perPod: { gpu: spec.intervals[0]!.gpuUnits },
            flavors: [spec.intervals[0]!.flavor],
          },
        ],
        expectedDurationMs: null,
        maxRunMs: null,
        workload: null,
        state: spec.state,
        admission: null,
        idempotencyKey: null,
        requestHash: 'seed',
        submitTime: first - HOUR,
        gpusRequested: spec.intervals[0]!.gpuUnits,
        preemptionCount: 0,
        meteredFrom: null,
        exitReason: spec.exitReason ?? null,
        submittedAt: new Date(first - HOUR),
        admittedAt: new Date(first),
        startedAt: new Date(first),
        finishedAt: spec.finishedAt ? new Date(spec.finishedAt) : null,
      });
      out.push(job);
      let firstOfJob = true;
      for (const interval of spec.intervals) {
        let at = Date.parse(interval.start);
        const end = at + interval.hours * HOUR;
        while (at < end) {
          const next = Math.min(end, (Math.floor(at / HOUR) + 1) * HOUR);
          writeRow(tx, rollup, job, spec, interval, at, next, firstOfJob);
          firstOfJob = false;
          at = next;
        }
      }
    }
    await tx.flush();
  });
  return out;
}

function writeRow(
  em: EntityManager,
  rollup: Map<string, UsageHourly>,
  job: Job,
  spec: SeedJob,
  i: SeedInterval,
  from: number,
  to: number,
  firstOfJob: boolean,
) {
  const seconds = (to - from) / 1000;
  const gpuSeconds = i.gpuUnits * (i.devicesPerUnit ?? 1) * seconds;
  const cost = (i.gpuUnits * i.unitPrice * seconds) / 3600;
  const used = i.utilization === null ? null : gpuSeconds * i.utilization;
  const cpuSeconds = (i.cpuCores ?? 16) * seconds;
  const memoryGibSeconds = (i.memoryGib ?? 64) * seconds;
  const { tenant, project, queue } = spec.people;
  const userId = spec.people.users[spec.user]!.id;
  em.create(UsageRecord, {
    job,
    tenant: em.getReference(Tenant, tenant.id),
    projectId: project.id,
    queueId: queue.id,
    userId,
    priorityClass: spec.priorityClass,
    flavor: i.flavor,
    startedAt: new Date(from),
    endedAt: new Date(to),
    durationMs: to - from,
    gpuUnits: i.gpuUnits,
    gpuSeconds,
    cpuSeconds,
    memoryGibSeconds,
    usedGpuSeconds: used,
    unitPricePerHour: i.unitPrice,
    cost,
    closedBy: i.closedBy ?? 'checkpoint',
    firstOfJob,
  });
  const hour = Math.floor(from / HOUR) * HOUR;
  const key = [hour, tenant.id, project.id, queue.id, userId, spec.priorityClass, i.flavor].join('|');
  let row = rollup.get(key);
  if (!row) {
    row = em.create(UsageHourly, {
      hour: new Date(hour),
      tenant: em.getReference(Tenant, tenant.id),
      projectId: project.id,
      queueId: queue.id,
      userId,
      priorityClass: spec.priorityClass,
      flavor: i.flavor,
      gpuSeconds: 0,
      usedGpuSeconds: 0,
      measuredGpuSeconds: 0,
      cpuSeconds: 0,
      memoryGibSeconds: 0,
      cost: 0,
      jobs: 0,
    });
    rollup.set(key, row);
  }
  row.gpuSeconds += gpuSeconds;
  row.usedGpuSeconds += used ?? 0;
  row.measuredGpuSeconds += used === null ? 0 : gpuSeconds;
  row.cpuSeconds += cpuSeconds;
  row.memoryGibSeconds += memoryGibSeconds;
  row.cost += cost;
  row.jobs += firstOfJob ? 1 : 0;
}

/**
 * The usage the graph, export and history tests share (aurora and borealis, Oct–Nov 2026):
 * - aurora, Max (MEMBER): 8 H100 for 2 h on Oct 1 10:00, training, 50 % used;
 * - aurora, Ada (TENANT_ADMIN): 7 MIG slices (one device) for 1 h on Oct 2 00:00, experiment, not sampled;
 * - aurora, Ada: 4 H100 for 1 h on Nov 5 05:00, training, 80 % used, failed;
 * - borealis, Bob (MEMBER): 2 H100 for 1 h on Oct 1 10:00, inference-critical.
 */
export async function seedStandardUsage(t: TestApp) {
  const aurora = await peopleOf(t, 'aurora-research');
  const borealis = await peopleOf(t, 'borealis-inference');
  const h100 = (
    start: string,
    hours: number,
    units: number,
    utilization: number | null,
    closedBy: UsageCloser = 'checkpoint',
  ): SeedInterval => ({
    flavor: 'h100-80g',
    start,
    hours,
    gpuUnits: units,
    unitPrice: 2.49,
    utilization,
    closedBy,
  });
  const [maxJob, adaMig, adaFailed, bobJob] = await seedUsage(t, [
    {
      people: aurora,
      user: 'max',
      name: 'max-pretrain',
      priorityClass: 'training',
      state: 'SUCCEEDED',
      finishedAt: '2026-10-01T12:00:00Z',
      exitReason: 'completed',
      intervals: [h100('2026-10-01T10:00:00Z', 2, 8, 0.5, 'succeeded')],
    },
    {
      people: aurora,
      user: 'ada',
      name: 'ada-mig-sweep',
      priorityClass: 'experiment',
      state: 'CANCELLED',
      finishedAt: '2026-10-02T01:00:00Z',
      exitReason: 'cancelled by user',
      intervals: [
        {
          flavor: 'a100-1g.10gb',
          start: '2026-10-02T00:00:00Z',
          hours: 1,
          gpuUnits: 7,
          devicesPerUnit: 1 / 7,
          unitPrice: 0.45,
          utilization: null,
          closedBy: 'cancelled',
        },
      ],
    },
    {
      people: aurora,
      user: 'ada',
      name: 'ada-eval',
      priorityClass: 'training',
      state: 'FAILED',
      finishedAt: '2026-11-05T06:00:00Z',
      exitReason: 'exit code 1',
      intervals: [h100('2026-11-05T05:00:00Z', 1, 4, 0.8, 'failed')],
    },
    {
      people: borealis,
      user: 'bob',
      name: 'bob-serving',
      priorityClass: 'inference-critical',
      state: 'SUCCEEDED',
      finishedAt: '2026-10-01T11:00:00Z',
      exitReason: 'completed',
      intervals: [h100('2026-10-01T10:00:00Z', 1, 2, 0.9, 'succeeded')],
    },
  ]);
  return {
    aurora,
    borealis,
    jobs: { maxJob: maxJob!, adaMig: adaMig!, adaFailed: adaFailed!, bobJob: bobJob! },
  };
}
