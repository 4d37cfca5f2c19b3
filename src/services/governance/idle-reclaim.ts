// Idle and held reclaim, a leader task: every FAIRWAY_IDLE_CHECK_INTERVAL_MS it looks at
// the admitted and running jobs of governed queues, flags those whose GPUs sit idle (probe samples
// under the policy's threshold for its idle time) or that are admitted but not running after the
// policy's limit, and does what the queue's policy says: notify the owner, reclaim while the queue
// borrows, or reclaim. The flag is stored on the job, so a new leader neither forgets nor repeats it.
import type { EntityManager } from '@mikro-orm/core';
import type { IdlePolicy, IsolationPolicy, ProbeSample } from '../../core/governance/index.js';
import {
  declaredFlag,
  flagJob,
  flagMessage,
  reclaimReasonOf,
  type StoredJobFlag,
  storedFlagOf,
} from '../../core/governance/index.js';
import type { QueueStatus, Scheduler } from '../../core/scheduling/index.js';
import { SchedulerInputError } from '../../core/scheduling/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import { JobProbeSample } from '../../persistence/governance/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Job } from '../../persistence/jobs/index.js';
import { recordJobEvent } from '../../persistence/scheduling/index.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';

// A stored flag and its sentence, as the schema shows them: it takes them from here, never from the core.
export { flagMessage, type StoredJobFlag, storedFlagOf };

import { policyForQueue } from '../../core/governance/index.js';
import { GOVERNED_QUEUES, loadPolicyLibrary } from '../../persistence/governance/index.js';

/** FAIRWAY_IDLE_CHECK_INTERVAL_MS's default. */
export const DEFAULT_IDLE_CHECK_INTERVAL_MS = 60_000;

/** The audit events' request id: written by the leader, not by a request. */
export const IDLE_RECLAIM_REQUEST_ID = 'governance.idle-reclaim';

/** Sample reads name at most this many jobs per query. */
const SAMPLE_CHUNK = 500;
/** A job flagged IDLE reads back to its flag's start, but at most this many idle times. */
const IDLE_READ_BACK_TIMES = 4;

const LIVE_STATES = ['ADMITTED', 'RUNNING'] as const;

export interface IdleReclaimSettings {
  /** Real ms between checks (0 is refused: leave the task out to switch it off). */
  everyMs: number;
}

/** One job of a governed queue as the check sees it. */
interface Candidate {
  job: Job;
  queueName: string;
  policy: IsolationPolicy;
  admittedAt: number;
  startedAt: number | null;
  stored: StoredJobFlag | null;
  /** The stored flag was raised during this admission (not one before a reclaim and readmission). */
  storedCurrent: boolean;
}

type Change =
  | { type: 'flag'; job: Job; admittedAt: number; flag: StoredJobFlag; auditEventId: string }
  | {
      type: 'clear';
      job: Job;
      admittedAt: number | null;
      previous: StoredJobFlag;
      why: string | null;
      auditEventId: string;
    };

interface ReclaimOrder {
  jobId: string;
  admittedAt: number;
  reason: 'idle' | 'not-running';
  holdMs: number;
}

/**
 * The task. Reclaims go to the core (`Scheduler.reclaim`) after the flag is committed; the next cycle
 * records the preemption (PREEMPTED, reason 'idle' or 'not-running', with the flag's numbers) and
 * puts the job back to pending. The hold before it may be admitted again is the policy's own limit
 * (idle time for IDLE, not-running time for NOT_RUNNING) in the backend's clock: a job reclaimed for
 * sitting idle cannot take the GPUs back at once and sit idle again.
 */
export function idleReclaimTask(settings: IdleReclaimSettings): LeaderTask {
  if (!(Number.isFinite(settings.everyMs) && settings.everyMs > 0))
    throw new RangeError(`idle check interval must be a positive number of ms, got ${settings.everyMs}`);
  // Reclaims asked of each core instance (a rebuilt core forgot them: they are asked again, once).
  const asked = new WeakMap<Scheduler, Map<string, number>>();
  return {
    name: 'idle-reclaim',
    everyMs: () => settings.everyMs,
    async run(ctx) {
      const orders = await checkJobs(ctx, settings);
      if (!orders.length || ctx.ended()) return;
      let mine = asked.get(ctx.core);
      if (!mine) asked.set(ctx.core, (mine = new Map()));
      // Bounded over a long term: a reclaim the core carried out (pending now, or gone) needs no memory —
      // the check below skips a job that is not admitted, and a readmission has another admittedAt.
      for (const jobId of mine.keys()) if (ctx.core.jobState(jobId) !== 'admitted') mine.delete(jobId);
      let reclaimed = false;
      for (const order of orders) {
        // Once per admission: the same flag is never reclaimed twice.
        if (mine.get(order.jobId) === order.admittedAt || ctx.core.jobState(order.jobId) !== 'admitted')
          continue;
        try {
          ctx.core.reclaim(order.jobId, order.reason, order.holdMs);
        } catch (error) {
          // Finished or cancelled since the read: nothing to take back.
          if (error instanceof SchedulerInputError) continue;
          throw error;
        }
        mine.set(order.jobId, order.admittedAt);
        reclaimed = true;
      }
      if (reclaimed) ctx.wake();
    },
  };
}

/** Flags, clears and reclaim orders for every admitted or running job of a governed queue. */
async function checkJobs(ctx: LeaderTaskContext, settings: IdleReclaimSettings): Promise<ReclaimOrder[]> {
  const em = ctx.em();
  const { now, timeScale } = ctx;
  const library = await loadPolicyLibrary(em);
  const queues = await em.find(Queue, GOVERNED_QUEUES, { populate: ['tenant'] });
  const governed = new Map<string, { name: string; policy: IsolationPolicy }>();
  for (const queue of queues) {
    const choice = policyForQueue(library, queue, queue.tenant.tier);
    if (choice) governed.set(queue.id, { name: queue.name, policy: choice.policy });
  }
  const changes: Change[] = [];
  // Flags left on live jobs of queues no longer governed: nothing decides about them any more.
  const orphans = await em.find(Job, {
    state: { $in: [...LIVE_STATES] },
    governanceFlag: { $ne: null },
    ...(governed.size ? { queue: { $nin: [...governed.keys()] } } : {}),
  });
  for (const job of orphans) {
    const previous = storedFlagOf(job.governanceFlag);
    if (previous)
      changes.push({
        type: 'clear',
        job,
        admittedAt: job.admittedAt?.getTime() ?? null,
        previous,
        why: null,
        auditEventId: uuidv7(),
      });
  }
  if (ctx.ended()) return [];
  const jobs = governed.size
    ? await em.find(
        Job,
        { state: { $in: [...LIVE_STATES] }, queue: { $in: [...governed.keys()] }, admittedAt: { $ne: null } },
        { orderBy: { id: 'asc' } },
      )
    : [];
  const candidates: Candidate[] = jobs.map((job) => {
    const { name, policy } = governed.get(job.queue.id)!;
    const admittedAt = job.admittedAt!.getTime();
    const stored = storedFlagOf(job.governanceFlag);
    return {
      job,
      queueName: name,
      policy,
      admittedAt,
      startedAt: job.startedAt?.getTime() ?? null,
      stored,
      storedCurrent: stored !== null && stored.since >= admittedAt,
    };
  });
  const samples = await recentSamples(em, candidates, now, timeScale, settings.everyMs);
  if (ctx.ended()) return [];
  const orders: ReclaimOrder[] = [];
  for (const c of candidates) {
    const idle = inBackendTime(c.policy.idle, timeScale);
    const borrowing = borrowsGpus(ctx.queueStatus(c.queueName));
    const own = samples.get(c.job.id) ?? [];
    const raw = flagJob(now, c.admittedAt, c.startedAt, own, idle, borrowing);
    if (!raw) {
      if (c.stored)
        changes.push({
          type: 'clear',
          job: c.job,
          admittedAt: c.admittedAt,
          previous: c.stored,
          why: c.storedCurrent ? clearedWhy(c.stored, own) : null,
          auditEventId: uuidv7(),
        });
      continue;
    }
    const flag = declaredFlag(raw, timeScale, c.policy.name);
    const same = c.storedCurrent && c.stored!.kind === flag.kind && c.stored!.decision === flag.decision;
    if (!same)
      changes.push({ type: 'flag', job: c.job, admittedAt: c.admittedAt, flag, auditEventId: uuidv7() });
    if (flag.decision === 'RECLAIM') {
      orders.push({
        jobId: c.job.id,
        admittedAt: c.admittedAt,
        reason: reclaimReasonOf(flag),
        holdMs: flag.kind === 'IDLE' ? idle.idleForMs : idle.notRunningForMs,
      });
    }
  }
  const written = changes.length ? await writeChanges(ctx, changes) : new Set<string>();
  if (ctx.ended()) return [];
  announce(
    ctx,
    changes.filter((c) => written.has(c.job.id)),
  );
  // A flag not written (the job moved on meanwhile) orders nothing.
  return orders.filter((o) => written.has(o.jobId) || !changes.some((c) => c.job.id === o.jobId));
}

/**
 * Each running candidate's samples since max(its start, now − idle time − margin) (backend clock),
 * oldest first: enough to see a stretch that has lasted the idle time. A job already flagged IDLE
 * reads back to its flag's start (at most IDLE_READ_BACK_TIMES idle times), so the stretch and its
 * numbers stay those of the flag.
 */
async function recentSamples(
  em: EntityManager,
  candidates: readonly Candidate[],
  now: number,
  timeScale: number,
  everyMs: number,
): Promise<Map<string, ProbeSample[]>> {
  const from = new Map<string, number>();
  for (const c of candidates) {
    if (c.startedAt === null) continue;
    const idleForMs = Math.round(c.policy.idle.idleForMs / timeScale);
    // The margin lets the stretch start just before the idle time with samples a probe interval apart.
    let start = now - idleForMs - Math.min(idleForMs, Math.max(2 * everyMs, 60_000));
    // Bounded: a job flagged IDLE (NOTIFY) for days would otherwise read its whole stretch every check.
    if (c.storedCurrent && c.stored!.kind === 'IDLE')
      start = Math.max(Math.min(start, c.stored!.since), now - IDLE_READ_BACK_TIMES * idleForMs);
    from.set(c.job.id, Math.max(c.startedAt, start));
  }
  const out = new Map<string, ProbeSample[]>();
  const ids = [...from.keys()];
  for (let i = 0; i < ids.length; i += SAMPLE_CHUNK) {
    const chunk = ids.slice(i, i + SAMPLE_CHUNK);
    // Each job from its own start: one job's long look back does not widen the others' reads.
    const rows = await em.find(
      JobProbeSample,
      { $or: chunk.map((id) => ({ job: id, at: { $gte: from.get(id)! } })) },
      { orderBy: { at: 'asc', id: 'asc' }, disableIdentityMap: true },
    );
    for (const row of rows) {
      let list = out.get(row.job.id);
      if (!list) out.set(row.job.id, (list = []));
      list.push({
        at: row.at,
        gpuUtilization: row.gpuUtilization,
        memoryUtilization: row.memoryUtilization ?? null,
      });
    }
  }
  return out;
}

/** One fenced write for the whole check: each job's flag, its FLAGGED event and its audit entry. Returns the
 * jobs written.
 */
async function writeChanges(ctx: LeaderTaskContext, changes: readonly Change[]): Promise<Set<string>> {
  const written = new Set<string>();
  await ctx.write(async (em) => {
    written.clear(); // a retried transaction starts over
    const jobs = new Map(
      (await em.find(Job, { id: { $in: changes.map((c) => c.job.id) } })).map((j) => [j.id, j]),
    );
    const createdAt = new Date(ctx.now);
    for (const change of changes) {
      const job = jobs.get(change.job.id);
      // Finished, cancelled or preempted since the read (or readmitted): the check next time decides.
      if (
        !job ||
        !LIVE_STATES.includes(job.state as (typeof LIVE_STATES)[number]) ||
        (job.admittedAt?.getTime() ?? null) !== change.admittedAt
      )
        continue;
      const audit = (action: string, input: Record<string, unknown>) =>
        em.create(AuditEvent, {
          id: change.auditEventId,
          tenant: job.tenant.id,
          actor: null,
          actorTokenId: null,
          action,
          targetType: 'Job',
          targetId: job.id,
          input,
          outcome: 'SUCCESS',
          errorCode: null,
          requestId: IDLE_RECLAIM_REQUEST_ID,
          createdAt,
        });
      if (change.type === 'flag') {
        const message = flagMessage(change.flag);
        job.governanceFlag = { ...change.flag };
        recordJobEvent(
          em,
          job,
          'FLAGGED',
          new Date(change.flag.at),
          change.flag.kind,
          message.slice(0, 500),
          { flag: change.flag },
        );
        audit('governance.job.flag', { flag: change.flag, queueId: job.queue.id, message });
      } else {
        job.governanceFlag = null;
        if (change.why)
          recordJobEvent(em, job, 'FLAGGED', createdAt, 'CLEARED', change.why.slice(0, 500), {
            cleared: change.previous,
          });
        audit('governance.job.unflag', {
          previous: change.previous,
          queueId: job.queue.id,
          why: change.why ?? 'no longer applies to this admission or queue',
        });
      }
      written.add(job.id);
    }
  });
  return written;
}

/** After commit: the owner's tenant event for each new flag, the audit entries, and the job's watchers. */
function announce(ctx: LeaderTaskContext, changes: readonly Change[]): void {
  for (const change of changes) {
    const { job } = change;
    if (change.type === 'flag') {
      ctx.events.publish('tenant-event', job.tenant.id, {
        kind: 'JOB_FLAGGED',
        jobId: job.id,
        queueId: job.queue.id,
        at: change.flag.at,
        flag: change.flag,
      });
    }
    ctx.events.publish('audit-event', job.tenant.id, { auditEventId: change.auditEventId });
    ctx.events.publish('job-updated', job.id, { jobId: job.id, state: job.state, at: ctx.now });
  }
}

/** Why a flag of this admission no longer holds, in words with the number. */
function clearedWhy(previous: StoredJobFlag, samples: readonly ProbeSample[]): string {
  if (previous.kind === 'NOT_RUNNING') return 'Running now: the NOT_RUNNING flag is cleared.';
  const last = samples[samples.length - 1];
  return last
    ? `GPU utilization back to ${Math.round(last.gpuUtilization * 100)}% (threshold ${Math.round((previous.utilizationBelow ?? 0) * 100)}%): the IDLE flag is cleared.`
    : 'No recent GPU utilization samples: the IDLE flag is cleared.';
}

/** Whether the queue holds more GPUs than its nominal (on any flavor) now. */
export function borrowsGpus(status: QueueStatus | null): boolean {
  return status?.resources.some((r) => r.resource === 'gpu' && r.borrowed > 1e-9) ?? false;
}

/** The policy's durations (declared time) in the backend's clock, as specs.ts does for
 * minRunBeforeReclaimMs.
 */
export function inBackendTime(idle: IdlePolicy, timeScale: number): IdlePolicy {
  if (timeScale === 1) return idle;
  return {
    ...idle,
    idleForMs: Math.round(idle.idleForMs / timeScale),
    notRunningForMs: Math.round(idle.notRunningForMs / timeScale),
  };
}
