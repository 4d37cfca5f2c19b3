// Jobs in and out: submit (validated into a JobState), finish and cancel.
import { release } from './admit.js';
import { eligibleFor } from './assignment/eligible.js';
import { SchedulerInputError } from './errors.js';
import { holdNew, matchingHold, unhold } from './holds.js';
import { type FlavorState, nodeCanEverHold, type Shape } from './nodes.js';
import { joinQueue, withdraw } from './queueing.js';
import { CPU, GPU, MEM } from './quota.js';
import type { CoreState, JobState, PodSetState } from './state.js';
import type { JobSpec } from './types.js';
import { RES, toInternal } from './units.js';

export function submit(core: CoreState, job: JobSpec): void {
  if (core.jobs.has(job.id)) throw new SchedulerInputError('DUPLICATE_JOB', `job ${job.id} already exists`);
  const state = buildJob(core, job);
  core.jobs.set(job.id, state);
  // Under a matching admission hold it waits in the held set, as if not yet submitted.
  if (matchingHold(core, job)) holdNew(core, state);
  else joinQueue(core, state);
}

export function finish(core: CoreState, jobId: string): void {
  drop(core, jobId);
}

export function cancel(core: CoreState, jobId: string): void {
  drop(core, jobId);
}

export function drop(core: CoreState, jobId: string): void {
  const j = core.jobs.get(jobId);
  if (!j) throw new SchedulerInputError('UNKNOWN_JOB', `unknown job ${jobId}`);
  core.jobs.delete(jobId);
  if (j.status === 'admitted') {
    release(core, j, core.clock.now());
    return;
  }
  if (j.held) unhold(core, j);
  else withdraw(core, j);
}

export function buildJob(core: CoreState, job: JobSpec): JobState {
  const q = core.queues.get(job.queue);
  if (!q) throw new SchedulerInputError('UNKNOWN_QUEUE', `job ${job.id}: unknown queue ${job.queue}`);
  if (job.tenant !== q.spec.tenant)
    throw new SchedulerInputError(
      'TENANT_MISMATCH',
      `job ${job.id}: tenant ${job.tenant} does not own queue ${job.queue}`,
    );
  const pc = core.classes.get(job.priorityClass);
  if (!pc)
    throw new SchedulerInputError(
      'UNKNOWN_PRIORITY_CLASS',
      `job ${job.id}: unknown priority class ${job.priorityClass}`,
    );
  if (!Number.isFinite(job.submitTime))
    throw new SchedulerInputError('INVALID_QUANTITY', `job ${job.id}: submitTime must be a number`);
  validateCheckpoint(job);
  if (!Array.isArray(job.podSets) || job.podSets.length === 0)
    throw new SchedulerInputError('INVALID_SPEC', `job ${job.id}: needs at least one pod set`);
  const podSets: PodSetState[] = [];
  for (const ps of job.podSets) {
    if (!Number.isInteger(ps.count) || ps.count < 1)
      throw new SchedulerInputError(
        ps.count < 0 ? 'NEGATIVE_QUANTITY' : 'INVALID_QUANTITY',
        `job ${job.id}/${ps.name}: count must be an integer >= 1`,
      );
    const minCount = ps.minCount ?? ps.count;
    if (!Number.isInteger(minCount) || minCount < 1 || minCount > ps.count)
      throw new SchedulerInputError(
        'INVALID_QUANTITY',
        `job ${job.id}/${ps.name}: minCount must be an integer in 1..count`,
      );
    const raw = [ps.perPod.gpu ?? 0, ps.perPod.cpu ?? 0, ps.perPod.memory ?? 0];
    raw.forEach((v, r) => {
      if (!Number.isFinite(v))
        throw new SchedulerInputError(
          'INVALID_QUANTITY',
          `job ${job.id}/${ps.name}: ${RES[r]} must be a number`,
        );
      if (v < 0)
        throw new SchedulerInputError('NEGATIVE_QUANTITY', `job ${job.id}/${ps.name}: ${RES[r]} is negative`);
    });
    const shape: Shape = {
      gpu: toInternal(GPU, raw[0] as number),
      cpu: toInternal(CPU, raw[1] as number),
      mem: toInternal(MEM, raw[2] as number),
    };
    const flavors = ps.flavors ?? q.flavorOrder;
    if (flavors.length === 0)
      throw new SchedulerInputError(
        'UNKNOWN_FLAVOR',
        `job ${job.id}/${ps.name}: queue ${q.spec.name} declares no flavor`,
      );
    // A flavor whose unit cannot express the request (a GPU share on MIG slices, 1.5 GPUs) is
    // dropped from this pod set's options; no usable option at all is an input error.
    const usable: string[] = [];
    let why = '';
    for (const f of flavors) {
      const fs = core.flavors.get(f);
      if (!fs || !q.flavorOrder.includes(f))
        throw new SchedulerInputError(
          'UNKNOWN_FLAVOR',
          `job ${job.id}/${ps.name}: flavor ${f} is unknown or not declared by queue ${q.spec.name}`,
        );
      if (shape.gpu > 0) {
        if (Math.abs(shape.gpu / 1000 - (raw[0] as number)) > 1e-9) {
          why = 'GPU shares go in steps of 1/1000';
          continue;
        }
        const whole = fs.spec.kind !== 'gpu' || shape.gpu >= 1000;
        if (whole && shape.gpu % 1000 !== 0) {
          why =
            fs.spec.kind === 'gpu'
              ? 'more than one GPU must be whole GPUs'
              : `slices must be whole on flavor ${f}`;
          continue;
        }
      }
      usable.push(f);
    }
    if (usable.length === 0)
      throw new SchedulerInputError('INVALID_QUANTITY', `job ${job.id}/${ps.name}: ${why}`);
    podSets.push({ name: ps.name, count: ps.count, minCount, shape, flavors: usable });
  }
  const state: JobState = {
    spec: job,
    queue: q,
    priority: pc.value,
    preemptible: pc.preemptible,
    podSets,
    status: 'pending',
    parked: false,
    held: false,
    reclaimHoldUntil: null,
    disruptionHold: false,
    decision: null,
    decisionVersion: -1,
    preemptedBy: null,
    admission: null,
    usage: new Map(),
    allocs: [],
    admittedAt: 0,
    admitSeq: 0,
    preemptions: 0,
    lastPreemption: null,
    preemptedCycle: -1,
    shapeKeys: [],
    parkKind: 'any',
    parkNeeds: [],
    parkSeq: 0,
    wakeNodes: null,
    releasable: null,
    heapIndex: -1,
  };
  // A pod no node could ever hold is an input error, not a pending reason (if the flavors have nodes at all).
  const eligible = eligibleFor(state);
  for (const ps of podSets) {
    let anyNode = false;
    let canHold = false;
    for (const f of ps.flavors) {
      for (const n of (core.flavors.get(f) as FlavorState).nodes) {
        if (!eligible(n)) continue;
        anyNode = true;
        if (nodeCanEverHold(n, ps.shape)) {
          canHold = true;
          break;
        }
      }
      if (canHold) break;
    }
    if (anyNode && !canHold)
      throw new SchedulerInputError(
        'REQUEST_TOO_LARGE',
        `job ${job.id}/${ps.name}: one pod is larger than any eligible node`,
      );
  }
  state.shapeKeys = podSets.map(
    (ps) => `${ps.flavors.join(',')}|${ps.shape.gpu}|${ps.shape.cpu}|${ps.shape.mem}`,
  );
  return state;
}

/** `checkpoint`: an object; `intervalMs` a finite number > 0; `resumable` a boolean. */
function validateCheckpoint(job: JobSpec): void {
  const cp = job.checkpoint;
  if (cp === undefined) return;
  if (cp === null || typeof cp !== 'object' || Array.isArray(cp))
    throw new SchedulerInputError('INVALID_SPEC', `job ${job.id}: checkpoint must be an object`);
  if (
    cp.intervalMs !== undefined &&
    (typeof cp.intervalMs !== 'number' || !Number.isFinite(cp.intervalMs) || cp.intervalMs <= 0)
  )
    throw new SchedulerInputError(
      'INVALID_SPEC',
      `job ${job.id}: checkpoint.intervalMs must be a number > 0`,
    );
  if (cp.resumable !== undefined && typeof cp.resumable !== 'boolean')
    throw new SchedulerInputError('INVALID_SPEC', `job ${job.id}: checkpoint.resumable must be a boolean`);
}
