/**
 * The update rules a real API server enforces beyond the schema, for the kinds where getting them
 * wrong is an easy mistake: a Job's pod template is immutable, except that while the Job is
 * suspended and not started (status.startTime unset) its scheduling directives may change
 * (labels, annotations, nodeSelector, tolerations, affinity, schedulingGates: Kubernetes ≥ 1.27);
 * completions only change together with parallelism on an Indexed Job (elastic Indexed Jobs);
 * selector, completionMode, podFailurePolicy and manualSelector never change.
 * A Pod's spec cannot change through a client write except for images, activeDeadlineSeconds, added
 * tolerations and removed schedulingGates; while it has scheduling gates, its nodeSelector and required
 * node affinity may also be tightened (additions only), as Kubernetes ≥ 1.27 allows.
 * A Deployment's or ReplicaSet's selector never changes (apps.ts).
 */
import { appsUpdateErrors } from './apps.js';

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

const MUTABLE_WHEN_SUSPENDED_META = ['labels', 'annotations'];
const MUTABLE_WHEN_SUSPENDED_SPEC = ['nodeSelector', 'tolerations', 'affinity', 'schedulingGates'];

function jobProblems(current: any, next: any): string[] {
  const problems: string[] = [];
  const before = current.spec ?? {};
  const after = next.spec ?? {};
  for (const field of ['selector', 'completionMode', 'podFailurePolicy', 'manualSelector']) {
    if (!same(before[field], after[field])) problems.push(`spec.${field}: Invalid value: field is immutable`);
  }
  if (!same(before.completions, after.completions)) {
    const elastic = after.completionMode === 'Indexed' && after.completions === after.parallelism;
    if (!elastic) problems.push('spec.completions: Invalid value: field is immutable');
  }
  if (!same(before.template, after.template)) {
    const notStarted = before.suspend === true && !current.status?.startTime;
    const strip = (template: any) => {
      const copy = structuredClone(template ?? {});
      for (const k of MUTABLE_WHEN_SUSPENDED_META) delete copy.metadata?.[k];
      for (const k of MUTABLE_WHEN_SUSPENDED_SPEC) delete copy.spec?.[k];
      return copy;
    };
    if (!notStarted) problems.push('spec.template: Invalid value: field is immutable');
    else if (!same(strip(before.template), strip(after.template))) {
      problems.push(
        'spec.template: Invalid value: only labels, annotations, nodeSelector, tolerations, affinity and schedulingGates may change on a suspended Job; the rest is immutable',
      );
    }
  }
  return problems;
}

/** The scheduling directives a gated pod may tighten: nodeSelector additions, node affinity additions. */
function gatedPodProblems(before: any, after: any): string[] {
  const problems: string[] = [];
  const oldSelector: Record<string, string> = before.nodeSelector ?? {};
  const newSelector: Record<string, string> = after.nodeSelector ?? {};
  if (Object.entries(oldSelector).some(([k, v]) => newSelector[k] !== v))
    problems.push(
      `spec.nodeSelector: Invalid value: ${JSON.stringify(newSelector)}: only additions to spec.nodeSelector are allowed (no mutations or deletions)`,
    );
  const path = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';
  const oldTerms: any[] =
    before.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  const newTerms: any[] =
    after.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  if (oldTerms.length > 0) {
    if (oldTerms.length !== newTerms.length)
      problems.push(
        `${path}: Invalid value: ${JSON.stringify(newTerms)}: no additions/deletions to non-empty NodeSelectorTerms list are allowed`,
      );
    else
      oldTerms.forEach((term, i) => {
        for (const field of ['matchExpressions', 'matchFields']) {
          const kept = (newTerms[i]?.[field] ?? []).slice(0, (term[field] ?? []).length);
          if (!same(kept, term[field] ?? []))
            problems.push(
              `${path}[${i}].${field}: Invalid value: ${JSON.stringify(newTerms[i]?.[field] ?? [])}: only additions are allowed (no mutations or deletions)`,
            );
        }
      });
  }
  return problems;
}

function podProblems(current: any, next: any): string[] {
  const before = current.spec ?? {};
  const after = next.spec ?? {};
  const problems: string[] = [];
  const oldGates = new Set((before.schedulingGates ?? []).map((g: any) => g.name));
  for (const gate of after.schedulingGates ?? [])
    if (!oldGates.has(gate.name))
      problems.push(
        `spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate '${gate.name}'`,
      );
  const gated = oldGates.size > 0;
  if (gated) problems.push(...gatedPodProblems(before, after));
  const strip = (spec: any) => {
    const copy = structuredClone(spec ?? {});
    for (const c of copy.containers ?? []) delete c.image;
    for (const c of copy.initContainers ?? []) delete c.image;
    delete copy.activeDeadlineSeconds;
    delete copy.schedulingGates;
    copy.tolerations = (copy.tolerations ?? []).slice(0, (before.tolerations ?? []).length);
    if (gated) {
      delete copy.nodeSelector;
      if (copy.affinity) delete copy.affinity.nodeAffinity;
      if (copy.affinity && Object.keys(copy.affinity).length === 0) delete copy.affinity;
    }
    return copy;
  };
  if (!same(strip(before), strip(after)))
    problems.push(
      'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
    );
  return problems;
}

/** Why a client may not make this update, or undefined. */
export function immutabilityErrors(current: any, next: any): string | undefined {
  const problems =
    current.kind === 'Job'
      ? jobProblems(current, next)
      : current.kind === 'Pod'
        ? podProblems(current, next)
        : appsUpdateErrors(current, next);
  return problems.length > 0 ? problems.join('; ') : undefined;
}
