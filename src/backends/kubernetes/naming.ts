// Names, labels and annotations of what Fairway creates in Kubernetes. Labels link every object
// back to its Fairway job and tenant, so a restart can find (and adopt or remove) them.
import { createHash } from 'node:crypto';
import type { KubernetesSettings } from './settings.js';

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'fairway' } as const;
export const LABEL_JOB_ID = 'fairway.dev/job-id';
export const LABEL_TENANT_ID = 'fairway.dev/tenant-id';
/** Queue name, sanitized to a label value. */
export const LABEL_QUEUE = 'fairway.dev/queue';
export const LABEL_POD_SET = 'fairway.dev/pod-set';
/** An inference service's objects and pods: its id, and the revision a workload and its pods run. */
export const LABEL_SERVICE_ID = 'fairway.dev/service-id';
export const LABEL_SERVICE_REVISION = 'fairway.dev/service-revision';
/** String(admission.at) on the Job and its pod template: tells one admission's run from the next. */
export const ANNOTATION_ADMISSION = 'fairway.dev/admission-at';
/** The user's job name (an annotation, not a label: it is free text). */
export const ANNOTATION_JOB_NAME = 'fairway.dev/job-name';
/** The job's declared checkpoint interval in seconds (only when it declared one). */
export const ANNOTATION_CHECKPOINT_INTERVAL = 'fairway.dev/checkpoint-interval-seconds';
/** "true" when the job declared itself resumable (it checkpoints when told to stop). */
export const ANNOTATION_RESUMABLE = 'fairway.dev/resumable';
/** The job's declared workload type (runtime probes; only when it declared one). */
export const ANNOTATION_WORKLOAD_TYPE = 'fairway.dev/workload-type';
/** "true" when the job declared itself latency-sensitive. */
export const ANNOTATION_LATENCY_SENSITIVE = 'fairway.dev/latency-sensitive';
/** Node taint reserving a node for one tenant; value: the tenant id. */
export const TAINT_DEDICATED = 'fairway.dev/dedicated';

const MAX_NAME = 63;

/** The tenant's namespace: prefix + slug, as a DNS label (lowercase, [a-z0-9-], ≤ 63, alphanumeric ends). */
export function namespaceName(
  settings: Pick<KubernetesSettings, 'namespacePrefix'>,
  tenantSlug: string,
): string {
  const raw = (settings.namespacePrefix + tenantSlug).toLowerCase().replace(/[^a-z0-9-]+/g, '-');
  // Cut to fit, two long slugs could share a namespace: a cut name ends with a hash of the whole.
  const fitted =
    raw.length <= MAX_NAME
      ? raw
      : `${trimToAlphanumeric(raw.slice(0, MAX_NAME - 9), /[a-z0-9]/)}-${createHash('sha256').update(raw).digest('hex').slice(0, 8)}`;
  const name = trimToAlphanumeric(fitted, /[a-z0-9]/);
  if (!name)
    throw new Error(
      `No namespace name can be made from prefix "${settings.namespacePrefix}" and tenant slug "${tenantSlug}"`,
    );
  return name;
}

/** One Kubernetes Job per pod set: `fw-<jobId>-<podSetIndex>` (jobId is a uuid, 36 chars → 44 chars). */
export function kubeJobName(jobId: string, podSetIndex: number): string {
  if (!Number.isInteger(podSetIndex) || podSetIndex < 0)
    throw new Error(`pod set index must be a non-negative integer, got ${podSetIndex}`);
  const id = jobId.toLowerCase();
  // Job names become the pods' `job-name` label value, so they must stay a DNS label of ≤ 63 chars.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(id))
    throw new Error(`job id "${jobId}" cannot be part of a Kubernetes name`);
  const name = `fw-${id}-${podSetIndex}`;
  if (name.length > MAX_NAME)
    throw new Error(`Kubernetes Job name "${name}" is longer than ${MAX_NAME} characters`);
  return name;
}

/** Sanitize to a label value: [A-Za-z0-9._-], ≤ 63, starting and ending alphanumeric ('' stays ''). */
export function labelValue(s: string): string {
  const replaced = s.replace(/[^A-Za-z0-9._-]+/g, '_');
  return trimToAlphanumeric(replaced.slice(0, MAX_NAME), /[A-Za-z0-9]/);
}

function trimToAlphanumeric(s: string, alnum: RegExp): string {
  let start = 0;
  let end = s.length;
  while (start < end && !alnum.test(s.charAt(start))) start++;
  while (end > start && !alnum.test(s.charAt(end - 1))) end--;
  return s.slice(start, end);
}
