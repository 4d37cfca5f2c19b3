// What the controller reads about each governed queue over a window (ControllerQueueInput): GPU
// figures sampled from the leader's core during the window, pending jobs at its end, an SLA
// estimate from job rows, and probed utilization from job_probe_samples.
import { type EntityManager, raw } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import type { ControllerQueueInput } from '../../core/governance/index.js';
import type { QueueStatus } from '../../core/scheduling/index.js';
import { JobProbeSample } from '../../persistence/governance/index.js';
import { Job } from '../../persistence/jobs/index.js';

/** A queue's GPUs at one instant, summed over its flavors (the core's queueStatus, resource gpu). */
export interface GpuReading {
  nominal: number;
  used: number;
  borrowed: number;
  lent: number;
}

export function gpuReading(status: QueueStatus): GpuReading {
  const out: GpuReading = { nominal: 0, used: 0, borrowed: 0, lent: 0 };
  for (const r of status.resources) {
    if (r.resource !== 'gpu') continue;
    out.nominal += r.nominal;
    out.used += r.used;
    out.borrowed += r.borrowed;
    out.lent += r.lent;
  }
  return out;
}

/** Samples kept per queue and window at most (a window has ~20 at the default period). */
const MAX_SAMPLES = 2000;

/**
 * The readings of every queue over one window, on the leader, in memory. Means are time-weighted:
 * each reading holds until the next one (so the leader's clock may jump, as tests move it); a new
 * leader starts from an empty window.
 */
export class WindowSamples {
  private readonly series = new Map<string, { at: number; reading: GpuReading }[]>();

  constructor(readonly startAt: number) {}

  add(at: number, readings: ReadonlyMap<string, GpuReading>): void {
    for (const [queue, reading] of readings) {
      let list = this.series.get(queue);
      if (!list) this.series.set(queue, (list = []));
      const last = list[list.length - 1];
      // The clock did not move since the last reading: it replaces that one.
      if (last && last.at >= at) last.reading = reading;
      else list.push({ at, reading });
      if (list.length > MAX_SAMPLES) list.splice(1, 1);
    }
  }

  /** The reading in force at `at`: the last one at or before it (the window's first when none). */
  readingAt(queue: string, at: number): GpuReading | null {
    const list = this.series.get(queue);
    if (!list?.length) return null;
    let found = list[0]!.reading;
    for (const s of list) {
      if (s.at > at) break;
      found = s.reading;
    }
    return found;
  }

  /** Time-weighted means from the first reading to `endAt` (the last reading alone when no time passed). */
  means(queue: string, endAt: number): GpuReading | null {
    const list = this.series.get(queue);
    if (!list?.length) return null;
    const sum: GpuReading = { nominal: 0, used: 0, borrowed: 0, lent: 0 };
    let span = 0;
    list.forEach((s, i) => {
      const until = i + 1 < list.length ? list[i + 1]!.at : Math.max(endAt, s.at);
      const w = until - s.at;
      span += w;
      for (const k of ['nominal', 'used', 'borrowed', 'lent'] as const) sum[k] += s.reading[k] * w;
    });
    if (span <= 0) return { ...list[list.length - 1]!.reading };
    for (const k of ['nominal', 'used', 'borrowed', 'lent'] as const) sum[k] = round(sum[k] / span);
    return sum;
  }
}

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/** A governed queue as the controller sees it. */
export interface GovernedQueue {
  id: string;
  name: string;
  tenantId: string;
  policy: string;
}

export interface GatherOptions {
  queues: readonly GovernedQueue[];
  samples: WindowSamples;
  /** The window's end (leader clock). */
  endAt: number;
  /** A job waiting longer than this missed its SLA (ControllerSettings.waitLimitMs). */
  slaMs: number;
  /** Whether the leader's core holds the job as pending (rows may lag the core by a cycle). */
  pendingInCore: (jobId: string) => boolean;
}

/**
 * Each governed queue's input for the window [samples.startAt, endAt), for queues sampled in it.
 *
 * - nominal/used/lent/borrowed: time-weighted means of the core's readings.
 * - pendingGpus, oldestWaitMs: the core's pending jobs at the end (their GPUs; the wait since the
 *   oldest's submit time, which survives preemptions).
 * - SLA (estimated from job rows): among jobs submitted in the window, a job is eligible when it
 *   fitted the queue's unused nominal at submit (its GPUs ≤ nominal − used in the reading in force
 *   then) and was not admitted borrowing (then it ran on others' capacity, not on its own share);
 *   it met the SLA when admitted within `slaMs` of submit. Outcomes must be known: a job still
 *   pending counts (as missed) only once it has waited longer than `slaMs`; jobs cancelled before
 *   admission do not count.
 * - utilization: mean of the probe samples taken in the window of the queue's jobs; null without any.
 */
export async function gatherControllerInputs(
  em: EntityManager,
  options: GatherOptions,
): Promise<ControllerQueueInput[]> {
  const { queues, samples, endAt, slaMs } = options;
  const startAt = samples.startAt;
  const sampled = queues.filter((q) => samples.means(q.name, endAt) !== null);
  if (!sampled.length) return [];
  const ids = sampled.map((q) => q.id);
  const [pending, submitted, utilization] = await Promise.all([
    em.find(
      Job,
      { queue: { $in: ids }, state: 'PENDING' },
      { fields: ['id', 'queue', 'gpusRequested', 'submitTime'] },
    ),
    em.find(
      Job,
      { queue: { $in: ids }, submitTime: { $gte: startAt, $lt: endAt } },
      { fields: ['id', 'queue', 'gpusRequested', 'submitTime', 'state', 'admission'] },
    ),
    meanUtilization(em, ids, startAt, endAt),
  ]);
  const inputs: ControllerQueueInput[] = [];
  for (const q of sampled) {
    const mean = samples.means(q.name, endAt)!;
    const waiting = pending.filter((j) => j.queue.id === q.id && options.pendingInCore(j.id));
    let slaEligible = 0;
    let slaMet = 0;
    for (const job of submitted) {
      if (job.queue.id !== q.id) continue;
      const at = samples.readingAt(q.name, job.submitTime);
      if (!at || job.gpusRequested > at.nominal - at.used + 1e-9) continue;
      if (job.admission) {
        if (job.admission.borrowed) continue;
        slaEligible++;
        if (job.admission.at - job.submitTime <= slaMs) slaMet++;
      } else if (job.state === 'PENDING' && endAt - job.submitTime > slaMs) {
        slaEligible++;
      }
    }
    inputs.push({
      queue: q.name,
      tenant: q.tenantId,
      policy: q.policy,
      nominalGpus: mean.nominal,
      usedGpus: mean.used,
      lentGpus: mean.lent,
      borrowedGpus: mean.borrowed,
      pendingGpus: waiting.reduce((sum, j) => sum + j.gpusRequested, 0),
      // A fold, not Math.min(...): a queue's backlog can outgrow the engine's argument limit.
      oldestWaitMs: waiting.length
        ? Math.max(0, endAt - waiting.reduce((oldest, j) => Math.min(oldest, j.submitTime), Infinity))
        : 0,
      slaEligible,
      slaMet,
      utilization: utilization.get(q.id) ?? null,
    });
  }
  return inputs;
}

/** Queue id → mean probed GPU utilization of its jobs' samples in [from, to). */
async function meanUtilization(
  em: EntityManager,
  queueIds: string[],
  from: number,
  to: number,
): Promise<Map<string, number>> {
  const rows = await (em as SqlEntityManager)
    .createQueryBuilder(JobProbeSample, 's')
    .select(['j.queue', raw('avg(s.gpu_utilization) as mean')])
    .join('s.job', 'j')
    .where({ 's.at': { $gte: from, $lt: to }, 'j.queue': { $in: queueIds } })
    .groupBy('j.queue')
    .execute<{ queue_id: string; mean: number | string | null }[]>('all', false);
  const out = new Map<string, number>();
  for (const r of rows) if (r.mean !== null) out.set(r.queue_id, round(Number(r.mean)));
  return out;
}
