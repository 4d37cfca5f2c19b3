/**
 * A Job's spec.podFailurePolicy against a failed pod, as the Job controller evaluates it
 * (pkg/controller/job/pod_failure_policy.go): the first matching rule decides; `onExitCodes` matches a
 * terminated container (of `containerName` if given) whose non-zero exit code is In / NotIn the values;
 * `onPodConditions` matches a pod condition of that type and status. No rule matches: Count.
 */

export type PodFailureAction = 'FailJob' | 'FailIndex' | 'Ignore' | 'Count';

export interface PodFailureDecision {
  action: PodFailureAction;
  /** For FailJob: the Job's FailureTarget / Failed condition message. */
  message?: string;
}

function matchingContainer(pod: any, requirement: any): any | undefined {
  const lists = [pod.status?.containerStatuses ?? [], pod.status?.initContainerStatuses ?? []];
  for (const statuses of lists)
    for (const cs of statuses) {
      const terminated = cs.state?.terminated;
      if (!terminated) continue; // still terminating: no exit code to match
      if (requirement.containerName !== undefined && requirement.containerName !== cs.name) continue;
      if (terminated.exitCode === 0) continue;
      const listed = (requirement.values ?? []).includes(terminated.exitCode);
      if (requirement.operator === 'In' ? listed : !listed) return cs;
    }
  return undefined;
}

function matchingCondition(pod: any, patterns: any[]): any | undefined {
  for (const c of pod.status?.conditions ?? [])
    if (patterns.some((p) => p.type === c.type && (p.status ?? 'True') === c.status)) return c;
  return undefined;
}

export function podFailureDecision(policy: any, pod: any): PodFailureDecision {
  const who = `${pod.metadata.namespace}/${pod.metadata.name}`;
  for (const [index, rule] of (policy?.rules ?? []).entries()) {
    const action: PodFailureAction = rule.action;
    if (rule.onExitCodes) {
      const cs = matchingContainer(pod, rule.onExitCodes);
      if (!cs) continue;
      if (action !== 'FailJob') return { action };
      return {
        action,
        message: `Container ${cs.name} for pod ${who} failed with exit code ${cs.state.terminated.exitCode} matching FailJob rule at index ${index}`,
      };
    }
    if (rule.onPodConditions) {
      const c = matchingCondition(pod, rule.onPodConditions);
      if (!c) continue;
      if (action !== 'FailJob') return { action };
      return {
        action,
        message: `Pod ${who} has condition ${c.type} matching FailJob rule at index ${index}`,
      };
    }
  }
  return { action: 'Count' };
}

/** `1,3-5,7` for the completed indexes {1,3,4,5,7}. */
export function indexRanges(indexes: Iterable<number>): string {
  const sorted = [...new Set(indexes)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function parseIndexRanges(text: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',').filter(Boolean)) {
    const [a, b] = part.split('-').map(Number);
    for (let i = a!; i <= (b ?? a!); i++) out.add(i);
  }
  return out;
}
