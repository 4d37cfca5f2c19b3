import type { JobExplanation, QuotaShortfall } from '../core/types.js';
import { hasCapability } from '../auth/principal.js';
import { Job } from '../persistence/scheduling-entities.js';
import type { ServiceContext } from './context.js';

/**
 * Client-facing text for why a job waits. The core returns codes, numbers and other jobs'
 * ids; the text is rendered here from those alone — never passed through from the core —
 * so it names another job only when the reader may see it (a job of the same tenant, read
 * with jobs:read). Anything else is "a job of another tenant": no id, name or slug.
 */

/** Free capacity of one flavor against the pods a `NoNodeFits` job needs (the core's `NodeFit`). */
export interface NodeFitView {
  flavor: string;
  largestFreeGpusOnOneNode: number;
  freeGpus: number;
  podsNeeded: number;
  gpusPerPod: number;
}

/**
 * The explanation with the core's structured fields typed here as optional, so this module
 * works with cores that do not have them yet (older cores only put ids into `message`).
 */
export type ExplanationView = JobExplanation & {
  nodeFit?: NodeFitView[];
  preemptedBy?: { jobId: string; reason: string };
  blockedBy?: string;
  etaUnknownReason?: string;
};

/** NoNodeFits only: per flavor tried, the free capacity the pods could not use. */
export const nodeFitOf = (e: JobExplanation): NodeFitView[] | null => (e as ExplanationView).nodeFit ?? null;

/** Why a pending job has no ETA (a code), or null when it has one. */
export const etaUnknownReasonOf = (e: JobExplanation): string | null => (e.eta == null ? ((e as ExplanationView).etaUnknownReason ?? null) : null);

/** What every job the reader may not see is called. */
export const FOREIGN_JOB = 'a job of another tenant';

/** How a job referenced by a pending reason is named for this reader. */
export type JobLabel = (jobId: string) => string;

/** The message for `explanation`, with referenced jobs named under the reader's rights. */
export async function pendingReasonMessage(ctx: ServiceContext, explanation: JobExplanation): Promise<string> {
  const labels = new Map<string, string>();
  for (const jobId of referencedJobs(explanation)) labels.set(jobId, await jobLabelFor(ctx, explanation, jobId));
  return renderPendingMessage(explanation, (jobId) => labels.get(jobId) ?? FOREIGN_JOB);
}

/** The preemption behind a requeued job: the core's structured field, or (older cores) the last preemption when the decision is still that one. */
function preemptionOf(explanation: JobExplanation): { jobId: string; reason: string } | null {
  const e = explanation as ExplanationView;
  if (e.preemptedBy?.jobId) return { jobId: e.preemptedBy.jobId, reason: e.preemptedBy.reason };
  // Before the core carried `preemptedBy` its decision text said "preempted by …"; the text
  // itself is never shown, it only tells that the last preemption is the current reason.
  if (e.lastPreemption && /^preempted by /i.test(e.message ?? '')) return { jobId: e.lastPreemption.preemptorId, reason: e.lastPreemption.reason };
  return null;
}

function referencedJobs(explanation: JobExplanation): string[] {
  const e = explanation as ExplanationView;
  const ids = new Set<string>();
  const preemption = preemptionOf(e);
  if (preemption) ids.add(preemption.jobId);
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
  const [subject, other] = await Promise.all([ctx.em.findOne(Job, { id: e.jobId }), ctx.em.findOne(Job, { id: jobId })]);
  if (!subject || !other || subject.tenant.id !== other.tenant.id) return FOREIGN_JOB;
  if (!hasCapability(ctx.principal, other.tenant.id, 'jobs:read')) return FOREIGN_JOB;
  return `job "${other.name}"`;
}

/** Pure rendering from the code and numbers; `label` names referenced jobs. */
export function renderPendingMessage(e: JobExplanation, label: JobLabel): string {
  const parts: string[] = [];
  const preemption = preemptionOf(e);
  if (preemption) parts.push(`Preempted by ${label(preemption.jobId)} (${preemption.reason}); requeued with its original submit time.`);
  parts.push(codeText(e, label));
  return parts.join(' ');
}

function codeText(explanation: JobExplanation, label: JobLabel): string {
  const e = explanation as ExplanationView;
  const sf = e.shortfall;
  switch ((e.reason as string | undefined) ?? 'NotYetEvaluated') {
    case 'NotYetEvaluated':
      return 'Waiting for the next scheduling cycle.';
    case 'WaitingForQuota':
      return sf ? `${shortfallHead(sf)}, available ${num(sf.available)} (${quotaNumbers(sf)}).` : 'Waiting for quota.';
    case 'ExceedsMaxQuota':
      return sf
        ? `${shortfallHead(sf)} exceeds the most the queue can ever get (${num(sf.maxAvailable)}).`
        : 'It asks for more than the queue can ever get.';
    case 'WindowClosed':
      return sf ? `${shortfallHead(sf)}, the queue gets at most ${num(sf.maxAvailable)} outside its time window.` : 'Waiting for the queue\'s time window.';
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
    default:
      return 'Waiting to be admitted.';
  }
}

const shortfallHead = (sf: QuotaShortfall) => `${sf.resource} on ${sf.flavor}: requested ${num(sf.requested)}`;
const quotaNumbers = (sf: QuotaShortfall) => `nominal ${num(sf.nominal)}, used ${num(sf.used)}${sf.borrowingLimit !== undefined ? `, borrowing limit ${num(sf.borrowingLimit)}` : ''}`;
const nodeFitText = (f: NodeFitView) =>
  `${f.flavor} needs ${f.podsNeeded} pod${f.podsNeeded === 1 ? '' : 's'} × ${num(f.gpusPerPod)}, the largest free block on one node is ${num(f.largestFreeGpusOnOneNode)} (${num(f.freeGpus)} free in all)`;
/** Trims float noise (0.30000000000000004) without hiding real fractions. */
const num = (value: number) => String(Math.round(value * 1000) / 1000);

/** Why a pending job has no ETA, for a client (the core gives a code). */
export function etaUnknownText(reason: string | undefined | null): string | null {
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
    default:
      return 'Cannot be predicted.';
  }
}
