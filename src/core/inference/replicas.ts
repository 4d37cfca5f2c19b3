// How a service's replica jobs follow its desired count (pure): one replica a job, in slots
// 0..desired−1. Slots below the minimum in force run in the guaranteed class (never preempted, so
// admitted within the queue's nominal only), the rest in the burst class (they borrow and can be
// reclaimed). A replica whose class or revision is not the slot's is replaced: the new one first,
// the old one cancelled once the new one runs (a surge the quota admits like any job, at most
// `maxSurge` slots at a time), unless the old one is not running anyway. Slots at or above the
// desired count are cancelled. Running the plan again on its own result changes nothing, so a
// new leader that runs it after a failover neither doubles nor loses replicas.

export type ReplicaState = 'PENDING' | 'ADMITTED' | 'RUNNING';

/** A replica job of the service that has not ended. */
export interface ReplicaJob {
  jobId: string;
  slot: number;
  state: ReplicaState;
  priorityClass: string;
  /** The service revision (image, command, arguments) it runs. */
  revision: number;
  /** Submit order (ms epoch): the later of two fresh jobs in one slot is the extra one. */
  submitTime: number;
}

export interface ReplicaClasses {
  /** For slots below the minimum: a class that is never preempted. */
  guaranteed: string;
  /** For the slots above it: a class that borrows and yields. */
  burst: string;
}

export interface ReplicaPlanInput {
  desired: number;
  minimum: number;
  revision: number;
  classes: ReplicaClasses;
  /** Slots replaced at once (a rolling update's or a class change's surge); at least 1. */
  maxSurge: number;
  replicas: readonly ReplicaJob[];
}

export interface ReplicaSubmit {
  slot: number;
  priorityClass: string;
  /** The job it replaces, cancelled once this one runs (null: a new slot). */
  replaces: string | null;
}

export interface ReplicaCancel {
  jobId: string;
  slot: number;
  reason: 'scale-down' | 'replaced' | 'duplicate';
}

export interface ReplicaPlan {
  submit: ReplicaSubmit[];
  cancel: ReplicaCancel[];
}

/** The class a slot runs in while `minimum` replicas are guaranteed. */
export const slotClass = (slot: number, minimum: number, classes: ReplicaClasses): string =>
  slot < minimum ? classes.guaranteed : classes.burst;

/** What to submit and cancel so the replicas match the desired count, classes and revision. */
export function planReplicas(input: ReplicaPlanInput): ReplicaPlan {
  const { desired, minimum, revision, classes } = input;
  const plan: ReplicaPlan = { submit: [], cancel: [] };
  const bySlot = new Map<number, ReplicaJob[]>();
  for (const r of input.replicas) {
    const list = bySlot.get(r.slot) ?? [];
    list.push(r);
    bySlot.set(r.slot, list);
  }
  // Slots no longer wanted, highest first (the burst replicas go before the guaranteed ones).
  for (const slot of [...bySlot.keys()].filter((s) => s >= desired).sort((a, b) => b - a))
    for (const r of bySlot.get(slot)!) plan.cancel.push({ jobId: r.jobId, slot, reason: 'scale-down' });

  let surging = 0;
  const pendingReplacements: { slot: number; stale: ReplicaJob[] }[] = [];
  for (let slot = 0; slot < desired; slot++) {
    const wanted = slotClass(slot, minimum, classes);
    const jobs = [...(bySlot.get(slot) ?? [])].sort((a, b) => a.submitTime - b.submitTime);
    const isFresh = (r: ReplicaJob) => r.priorityClass === wanted && r.revision === revision;
    const fresh = jobs.filter(isFresh);
    const stale = jobs.filter((r) => !isFresh(r));
    // Two fresh jobs in one slot (a write retried across a failover): the later one goes, unless only it runs.
    if (fresh.length > 1) {
      const keep = fresh.find((r) => r.state === 'RUNNING') ?? fresh[0]!;
      for (const r of fresh) if (r !== keep) plan.cancel.push({ jobId: r.jobId, slot, reason: 'duplicate' });
    }
    const kept = fresh.find((r) => r.state === 'RUNNING') ?? fresh[0];
    if (!kept) {
      if (stale.length === 0) {
        plan.submit.push({ slot, priorityClass: wanted, replaces: null });
        continue;
      }
      // A stale replica that is not serving gives way at once; a serving one waits for its replacement.
      const serving = stale.filter((r) => r.state === 'RUNNING');
      for (const r of stale)
        if (r.state !== 'RUNNING') plan.cancel.push({ jobId: r.jobId, slot, reason: 'replaced' });
      if (serving.length === 0) plan.submit.push({ slot, priorityClass: wanted, replaces: null });
      else pendingReplacements.push({ slot, stale: serving });
      continue;
    }
    if (stale.length === 0) continue;
    if (kept.state === 'RUNNING') {
      for (const r of stale) plan.cancel.push({ jobId: r.jobId, slot, reason: 'replaced' });
    } else {
      // The replacement is on its way: it counts against the surge; stale replicas not serving go now.
      surging++;
      for (const r of stale)
        if (r.state !== 'RUNNING') plan.cancel.push({ jobId: r.jobId, slot, reason: 'replaced' });
    }
  }
  for (const { slot, stale } of pendingReplacements) {
    if (surging >= Math.max(1, input.maxSurge)) break;
    surging++;
    plan.submit.push({
      slot,
      priorityClass: slotClass(slot, minimum, classes),
      replaces: stale[0]!.jobId,
    });
  }
  return plan;
}

/** Replicas by state, as the graph reports them. */
export function replicaCounts(replicas: readonly ReplicaJob[]): {
  admitted: number;
  ready: number;
  pending: number;
} {
  const slots = (pred: (r: ReplicaJob) => boolean) => new Set(replicas.filter(pred).map((r) => r.slot)).size;
  return {
    admitted: slots((r) => r.state !== 'PENDING'),
    ready: slots((r) => r.state === 'RUNNING'),
    // Slots waiting for a first admission (a pending replacement beside a serving replica is not one).
    pending: new Set(replicas.map((r) => r.slot)).size - slots((r) => r.state !== 'PENDING'),
  };
}
