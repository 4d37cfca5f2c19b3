/**
 * The update rules a real API server enforces beyond the schema, for the kinds where getting them
 * wrong is an easy mistake: a Job's pod template is immutable, except that while the Job is
 * suspended and not started (status.startTime unset) its scheduling directives may change
 * (labels, annotations, nodeSelector, tolerations, affinity, schedulingGates: Kubernetes ≥ 1.27);
 * completions only change together with parallelism on an Indexed Job (elastic Indexed Jobs);
 * selector, completionMode, podFailurePolicy and manualSelector never change.
 * A Pod's spec cannot change through a client write except for image, activeDeadlineSeconds and added
 * tolerations.
 */
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

function podProblems(current: any, next: any): string[] {
  const strip = (spec: any) => {
    const copy = structuredClone(spec ?? {});
    for (const c of copy.containers ?? []) delete c.image;
    delete copy.activeDeadlineSeconds;
    copy.tolerations = (copy.tolerations ?? []).slice(0, (current.spec?.tolerations ?? []).length);
    return copy;
  };
  return same(strip(current.spec), strip(next.spec))
    ? []
    : [
        'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)',
      ];
}

/** Why a client may not make this update, or undefined. */
export function immutabilityErrors(current: any, next: any): string | undefined {
  const problems =
    current.kind === 'Job'
      ? jobProblems(current, next)
      : current.kind === 'Pod'
        ? podProblems(current, next)
        : [];
  return problems.length > 0 ? problems.join('; ') : undefined;
}
