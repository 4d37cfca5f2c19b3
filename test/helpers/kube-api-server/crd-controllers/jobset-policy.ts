/**
 * What the JobSet controller decides from a JobSet and its child Jobs (jobset.ts acts on it): the labels
 * and annotations of a child Job, replicatedJobsStatus, the success policy, the failure policy.
 */
import { createHash } from 'node:crypto';

export const KEY = 'jobset.sigs.k8s.io/';
export const RESTARTS = `${KEY}restart-attempt`;

export const jobFinished = (job: any): 'Complete' | 'Failed' | undefined =>
  (job.status?.conditions ?? []).find(
    (c: any) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  )?.type;

export interface Children {
  active: any[];
  successful: any[];
  failed: any[];
  previous: any[];
}

/** Labels (and annotations) the controller puts on a child Job and its pod template. */
export function jobSetLabels(js: any, rjob: any, index: number): Record<string, string> {
  const rjobs: any[] = js.spec.replicatedJobs ?? [];
  const total = rjobs.reduce((n, r) => n + (r.replicas ?? 1), 0);
  const before = (filter: (r: any) => boolean) => {
    let n = 0;
    for (const r of rjobs) {
      if (r.name === rjob.name) return n + index;
      if (filter(r)) n += r.replicas ?? 1;
    }
    return n + index;
  };
  const group = rjob.groupName ?? 'default';
  const inGroup = (r: any) => (r.groupName ?? 'default') === group;
  const jobName = `${js.metadata.name}-${rjob.name}-${index}`;
  const labels: Record<string, string> = {
    [`${KEY}jobset-name`]: js.metadata.name,
    [`${KEY}jobset-uid`]: js.metadata.uid,
    [`${KEY}replicatedjob-name`]: rjob.name,
    [RESTARTS]: String(js.status?.restarts ?? 0),
    [`${KEY}replicatedjob-replicas`]: String(rjob.replicas ?? 1),
    [`${KEY}global-replicas`]: String(total),
    [`${KEY}job-index`]: String(index),
    [`${KEY}job-key`]: createHash('sha1').update(`${js.metadata.namespace}/${jobName}`).digest('hex'),
    [`${KEY}job-global-index`]: String(before(() => true)),
    [`${KEY}group-name`]: group,
    [`${KEY}group-replicas`]: String(rjobs.filter(inGroup).reduce((n, r) => n + (r.replicas ?? 1), 0)),
    [`${KEY}job-group-index`]: String(before(inGroup)),
  };
  const coordinator = js.spec.coordinator;
  if (coordinator)
    labels[`${KEY}coordinator`] =
      `${js.metadata.name}-${coordinator.replicatedJob}-${coordinator.jobIndex ?? 0}-${coordinator.podIndex ?? 0}.${subdomainOf(js)}`;
  return labels;
}

export const dnsHostnames = (js: any) => js.spec.network?.enableDNSHostnames === true;
export const subdomainOf = (js: any): string => js.spec.network?.subdomain || js.metadata.name;

/** calculateReplicatedJobStatuses, in the order of spec.replicatedJobs. */
export function replicatedJobsStatus(js: any, children: Children): any[] {
  return (js.spec.replicatedJobs ?? []).map((rjob: any) => {
    const of = (jobs: any[]) =>
      jobs.filter((j) => j.metadata.labels?.[`${KEY}replicatedjob-name`] === rjob.name);
    const active = of(children.active);
    const pods = (j: any) => Math.min(j.spec.parallelism ?? 1, j.spec.completions ?? Infinity);
    return {
      name: rjob.name,
      ready: active.filter((j) => (j.status?.succeeded ?? 0) + (j.status?.ready ?? 0) >= pods(j)).length,
      succeeded: of(children.successful).length,
      failed: of(children.failed).length,
      active: active.filter((j) => (j.status?.active ?? 0) > 0).length,
      suspended: active.filter((j) => j.spec.suspend === true).length,
    };
  });
}

/** executeSuccessPolicy: All (every Job of the targeted replicatedJobs) or Any (one of them) succeeded. */
export function successPolicyMet(js: any, successful: any[]): boolean {
  const policy = js.spec.successPolicy ?? { operator: 'All' };
  const targets: string[] = policy.targetReplicatedJobs ?? [];
  const targeted = (name: string) => targets.length === 0 || targets.includes(name);
  const matching = successful.filter((j) => targeted(j.metadata.labels?.[`${KEY}replicatedjob-name`])).length;
  const expected =
    policy.operator === 'Any'
      ? 1
      : (js.spec.replicatedJobs ?? [])
          .filter((r: any) => targeted(r.name))
          .reduce((n: number, r: any) => n + (r.replicas ?? 1), 0);
  return matching >= expected;
}

export type FailureDecision =
  | { fail: [reason: string, message: string] }
  | { restart: { counts: boolean; reason: string; message: string } };

/**
 * executeFailurePolicy: no failurePolicy → FailedJobs; else the first rule matching a failed Job
 * (onJobFailureReasons, onJobFailureMessagePatterns, targetReplicatedJobs; the earliest failure), or the
 * default action RestartJobSet: FailJobSet fails, RestartJobSet restarts until maxRestarts
 * (ReachedMaxRestarts), RestartJobSetAndIgnoreMaxRestarts always restarts.
 */
export function failureDecision(js: any, status: any, failed: any[]): FailureDecision {
  const failureOf = (job: any) =>
    (job.status?.conditions ?? []).find((c: any) => c.type === 'Failed' && c.status === 'True');
  const byTime = [...failed].sort((a, b) =>
    String(failureOf(a)?.lastTransitionTime).localeCompare(String(failureOf(b)?.lastTransitionTime)),
  );
  const withJob = (msg: string, job: any) => `${msg} (first failed job: ${job.metadata.name})`;
  const policy = js.spec.failurePolicy;
  if (!policy)
    return { fail: ['FailedJobs', withJob('jobset failed due to one or more job failures', byTime[0])] };
  let action = 'RestartJobSet';
  let rule: any;
  let job = byTime[0];
  for (const r of policy.rules ?? []) {
    const match = byTime.find((j) => {
      const failure = failureOf(j);
      const rjobName = j.metadata.labels?.[`${KEY}replicatedjob-name`];
      const patterns: string[] = r.onJobFailureMessagePatterns ?? [];
      return (
        (!(r.onJobFailureReasons ?? []).length || r.onJobFailureReasons.includes(failure?.reason)) &&
        (!patterns.length || patterns.some((p) => new RegExp(p).test(failure?.message ?? ''))) &&
        (!(r.targetReplicatedJobs ?? []).length || r.targetReplicatedJobs.includes(rjobName))
      );
    });
    if (match) {
      [action, rule, job] = [r.action, r, match];
      break;
    }
  }
  if (action === 'FailJobSet')
    return {
      fail: ['FailJobSetFailurePolicyAction', withJob('applying FailJobSet failure policy action', job)],
    };
  const counts = action === 'RestartJobSet';
  if (counts && (status.restartsCountTowardsMax ?? 0) >= (policy.maxRestarts ?? 0))
    return {
      fail: ['ReachedMaxRestarts', withJob('jobset failed due to reaching max number of restarts', job)],
    };
  const message = withJob(
    counts
      ? 'applying RestartJobSet failure policy action'
      : 'applying RestartJobSetAndIgnoreMaxRestarts failure policy action',
    job,
  );
  return {
    restart: { counts, reason: rule ? `FailurePolicy_${rule.name}` : 'DefaultFailurePolicy', message },
  };
}
