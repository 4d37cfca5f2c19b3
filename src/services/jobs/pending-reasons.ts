import type {
  EtaUnknownReason,
  JobExplanation,
  NodeFit,
  Preview,
  QuotaShortfall,
} from '../../core/scheduling/index.js';

// The scheduler's explanation of a pending job and its per-flavor fit: the schema takes them from here,
// never from the core.
export type { JobExplanation, NodeFit };

import { hasCapability } from '../../auth/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { Project } from '../../persistence/tenancy/index.js';
import type { ServiceContext } from '../context.js';
import { canSeeMoney } from '../metering/index.js';

/**
 * Client-facing text for why a job waits. The core returns codes, numbers and other jobs'
 * ids; the text is rendered here from those alone — never passed through from the core —
 * so it names another job only when the reader may see it (a job of the same tenant, read
 * with jobs:read). Anything else is "a job of another tenant": no id, name or slug.
 */

/** NoNodeFits only: per flavor tried, the free capacity the pods could not use. */
export const nodeFitOf = (e: JobExplanation): NodeFit[] | null => e.nodeFit ?? null;

/** Why a pending job has no ETA (a code), or null when it has one. */
export const etaUnknownReasonOf = (e: JobExplanation): EtaUnknownReason | null =>
  e.eta == null ? (e.etaUnknownReason ?? null) : null;

/** What every job the reader may not see is called. */
export const FOREIGN_JOB = 'a job of another tenant';

/** How a job referenced by a pending reason is named for this reader. */
export type JobLabel = (jobId: string) => string;

/** The message for `explanation`, with referenced jobs named under the reader's rights. */
export async function pendingReasonMessage(
  ctx: ServiceContext,
  explanation: JobExplanation,
): Promise<string> {
  // A budget's amounts are money: only readers allowed money see them, in the text too.
  if (explanation.hold && !(await holdAmountsVisible(ctx, explanation)))
    explanation = { ...explanation, hold: { ...explanation.hold, spent: Number.NaN, limit: Number.NaN } };
  const labels = new Map<string, string>();
  for (const jobId of referencedJobs(explanation))
    labels.set(jobId, await jobLabelFor(ctx, explanation, jobId));
  return renderPendingMessage(explanation, (jobId) => labels.get(jobId) ?? FOREIGN_JOB);
}

/**
 * Whether the reader may see the amounts behind a BudgetExhausted reason: the money rule
 * (tenant admins, auditors, platform admins, with usage:read) in the budget's tenant.
 */
export async function holdAmountsVisible(
  ctx: ServiceContext,
  e: Pick<JobExplanation, 'hold'>,
): Promise<boolean> {
  if (!e.hold) return false;
  const tenantId =
    e.hold.scope === 'tenant' ? e.hold.id : (await ctx.em.findOne(Project, { id: e.hold.id }))?.tenant.id;
  return tenantId !== undefined && canSeeMoney(ctx, tenantId);
}

function referencedJobs(e: JobExplanation): string[] {
  const ids = new Set<string>();
  // A governance reclaim ('idle', 'not-running') names no job ('').
  if (e.preemptedBy?.jobId) ids.add(e.preemptedBy.jobId);
  if (e.blockedBy) ids.add(e.blockedBy);
  return [...ids];
}

/**
 * Names `jobId` only if it belongs to the same tenant as the explained job and the reader
 * holds jobs:read there. The lookup goes through the request's EntityManager, whose tenant
 * filter already hides other tenants' rows (platform admins see every row, but a message
 * about one tenant's job still names no other tenant's job).
 */
async function jobLabelFor(ctx: ServiceContext, e: JobExplanation, jobId: string): Promise<string> {
  const [subject, other] = await Promise.all([
    ctx.em.findOne(Job, { id: e.jobId }),
    ctx.em.findOne(Job, { id: jobId }),
  ]);
  if (!subject || !other || subject.tenant.id !== other.tenant.id) return FOREIGN_JOB;
  if (!hasCapability(ctx.principal, other.tenant.id, 'jobs:read')) return FOREIGN_JOB;
  return `job "${other.name}"`;
}

/**
 * Why a previewed job would not be admitted now, in the same words as a pending job's reason
 * (the core's own text never reaches a client).
 */
export async function previewMessage(
  ctx: ServiceContext,
  preview: Preview,
  queue: string,
): Promise<string | null> {
  if (!preview.reason) return null;
  const { reason, shortfall, nodeFit, hold } = preview;
  return pendingReasonMessage(ctx, {
    jobId: '',
    queue,
    state: 'pending',
    reason,
    shortfall,
    nodeFit,
    hold,
    preemptions: 0,
  });
}

/** Pure rendering from the code and numbers; `label` names referenced jobs. */
export function renderPendingMessage(e: JobExplanation, label: JobLabel): string {
  const parts: string[] = [];
  if (e.preemptedBy?.reason === 'idle' || e.preemptedBy?.reason === 'not-running') {
    parts.push(
      `Reclaimed by its queue's policy (${e.preemptedBy.reason === 'idle' ? 'its GPUs sat idle' : 'admitted but not running'}); requeued with its original submit time.`,
    );
  } else if (e.preemptedBy)
    parts.push(
      `Preempted by ${label(e.preemptedBy.jobId)} (${e.preemptedBy.reason}); requeued with its original submit time.`,
    );
  parts.push(codeText(e, label));
  // core quota-mode.ts nominalOnly: a job that can never be preempted never borrows (it would hold a
  // lender's nominal for good).
  if (e.shortfall?.nominalOnly)
    parts.push(
      "Its priority class is never preempted, so it runs only within its queue's nominal quota and never borrows.",
    );
  // Bounded tails (core README, "Bounded tails"): say which side of a reservation the job is on.
  // Counts and instants only: which job holds a reservation is not this reader's to know.
  if (e.reservation)
    parts.push(
      `It has waited long: ${e.reservation.nodes.length} node(s) are reserved for it from ${new Date(e.reservation.start).toISOString()}.`,
    );
  if (e.keptOffReserved)
    parts.push(
      `${e.keptOffReserved.nodes} node(s) with room for it are reserved from ${new Date(e.keptOffReserved.start).toISOString()} for a job that has waited long, and it would still run then on borrowed quota.`,
    );
  return parts.join(' ');
}

function codeText(e: JobExplanation, label: JobLabel): string {
  const sf = e.shortfall;
  switch ((e.reason as string | undefined) ?? 'NotYetEvaluated') {
    case 'NotYetEvaluated':
      return 'Waiting for the next scheduling cycle.';
    case 'WaitingForQuota':
      return sf
        ? `${shortfallHead(sf)}, available ${num(sf.available)} (${quotaNumbers(sf)}).`
        : 'Waiting for quota.';
    case 'ExceedsMaxQuota':
      return sf
        ? `${shortfallHead(sf)} exceeds the most the queue can ever get (${num(sf.maxAvailable)}).`
        : 'It asks for more than the queue can ever get.';
    case 'WindowClosed':
      return sf
        ? `${shortfallHead(sf)}, the queue gets at most ${num(sf.maxAvailable)} outside its time window.`
        : "Waiting for the queue's time window.";
    case 'NoNodeFits':
      return e.nodeFit?.length
        ? `Quota allows it, but no set of free nodes fits its pods: ${e.nodeFit.map(nodeFitText).join('; ')}.`
        : 'Quota allows it, but no set of free nodes fits its pods.';
    case 'NoFittingNode':
      return 'No eligible node of its flavors has room for its pods (or none exists that this tenant may use).';
    case 'StrictFIFOBlocked':
      return `Its StrictFIFO queue ${e.queue} waits behind ${e.blockedBy ? label(e.blockedBy) : 'the job at its head'}, which cannot be admitted yet.`;
    case 'WaitingForPreemption':
      return 'Waiting for preempted jobs to release their resources.';
    case 'BudgetExhausted':
      if (e.hold && Number.isNaN(e.hold.spent))
        return `The ${e.hold.scope}'s monthly budget is exhausted; jobs of this priority class wait until it is raised or the month ends.`;
      return e.hold
        ? `The ${e.hold.scope}'s monthly budget is exhausted: ${money(e.hold.spent)} of ${money(e.hold.limit)} ${e.hold.currency} spent in ${e.hold.period}; jobs of this priority class wait until it is raised or the month ends.`
        : 'A monthly budget is exhausted; jobs of this priority class wait until it is raised or the month ends.';
    case 'ReclaimHold':
      if (e.message?.startsWith('disrupted by the cluster'))
        return `Stopped by the cluster (see its DISRUPTED events); it waits out its backoff and is not admitted again before ${e.reclaimHoldUntil != null ? new Date(e.reclaimHoldUntil).toISOString() : 'its backoff ends'}.`;
      return `Reclaimed by its queue's isolation policy (see its FLAGGED and PREEMPTED events); not admitted again before ${e.reclaimHoldUntil != null ? new Date(e.reclaimHoldUntil).toISOString() : 'its hold ends'}.`;
    default:
      return 'Waiting to be admitted.';
  }
}

const shortfallHead = (sf: QuotaShortfall) =>
  `${sf.resource} on ${sf.flavor}: requested ${num(sf.requested)}`;
const quotaNumbers = (sf: QuotaShortfall) =>
  `nominal ${num(sf.nominal)}, used ${num(sf.used)}${sf.borrowingLimit !== undefined ? `, borrowing limit ${num(sf.borrowingLimit)}` : ''}`;
const nodeFitText = (f: NodeFit) =>
  `${f.flavor} needs ${f.podsNeeded} pod${f.podsNeeded === 1 ? '' : 's'} × ${num(f.gpusPerPod)}, the largest free block on one node is ${num(f.largestFreeGpusOnOneNode)} (${num(f.freeGpus)} free in all)`;
const moneyFormat = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const money = (value: number) => moneyFormat.format(value);
/** Trims float noise (0.30000000000000004) without hiding real fractions. */
const num = (value: number) => String(Math.round(value * 1000) / 1000);

/** Why a pending job has no ETA, for a client (the core gives a code). */
export function etaUnknownText(reason: EtaUnknownReason | undefined | null): string | null {
  switch (reason) {
    case undefined:
    case null:
      return null;
    case 'NoDeclaredDuration':
      return 'A job it waits for has no declared duration, so its end cannot be predicted.';
    case 'TooFarAhead':
      return 'Too many jobs ahead of it to predict.';
    case 'NeverFits':
      return 'It does not fit even when every job with a known end has ended.';
    case 'WindowClosed':
      return 'It waits for a time window of its queue to open.';
    case 'BudgetExhausted':
      return 'It waits until the exhausted budget is raised or the month ends.';
    case 'ReclaimHold':
      return "It waits until its hold ends: a reclaim by its queue's isolation policy, or a disruption's backoff.";
    default:
      return 'Cannot be predicted.';
  }
}
