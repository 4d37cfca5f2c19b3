// How an existing Job is brought to a new admission. Kubernetes lets a suspended Job change
// its scheduling directives (node selector, affinity, tolerations) and its template's labels
// and annotations, not its containers or completions: a Job whose workload differs (another
// flavor's resource name, another gang size) is replaced instead.
import type { V1Job } from '@kubernetes/client-node';
import { ANNOTATION_ADMISSION } from './naming.js';

/** Same containers, volumes and completions: the Job can be resumed for the new admission. */
export function sameWorkload(existing: V1Job, desired: V1Job): boolean {
  const shape = (j: V1Job) =>
    JSON.stringify({
      completions: j.spec?.completions ?? null,
      completionMode: j.spec?.completionMode ?? 'NonIndexed',
      containers: j.spec?.template.spec?.containers ?? [],
      volumes: j.spec?.template.spec?.volumes ?? [],
      priorityClassName: j.spec?.template.spec?.priorityClassName ?? null,
    });
  return shape(existing) === shape(desired);
}

/** Keys of `before` absent from `after` set to null: a merge patch that replaces a map. */
function replacing(before: Record<string, string> | undefined, after: Record<string, string> | undefined): Record<string, string | null> | null {
  if (!after && !before) return null;
  const out: Record<string, string | null> = { ...(after ?? {}) };
  for (const key of Object.keys(before ?? {})) if (!(key in out)) out[key] = null;
  return out;
}

/** The merge patch that moves a suspended Job to the desired admission's placement and resumes it. */
export function resumePatch(existing: V1Job, desired: V1Job, admissionAt: string): Record<string, unknown> {
  const before = existing.spec?.template.spec;
  const after = desired.spec?.template.spec;
  return {
    metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } },
    spec: {
      suspend: false,
      parallelism: desired.spec?.parallelism ?? 1,
      template: {
        metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } },
        spec: {
          nodeSelector: replacing(before?.nodeSelector, after?.nodeSelector),
          affinity: after?.affinity ?? null,
          tolerations: after?.tolerations ?? null,
        },
      },
    },
  };
}
