/**
 * What the Deployment controller (deployment-controller.ts) computes: the pod-template-hash, maxSurge /
 * maxUnavailable as counts (ResolveFenceposts: surge rounded up, unavailable down, 1 if both are 0), the
 * conditions (SetDeploymentCondition) and the status (calculateStatus + syncRolloutStatus): replicas,
 * updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas (zeros omitted), Available,
 * Progressing (ReplicaSetUpdated on progress, NewReplicaSetAvailable once complete, ProgressDeadlineExceeded
 * after progressDeadlineSeconds without progress), ReplicaFailure from its ReplicaSets.
 */
import { canonical } from './apps.js';
import { kubeTime } from './store.js';

export const TEMPLATE_HASH = 'pod-template-hash';
export const REVISION = 'deployment.kubernetes.io/revision';
export const DESIRED = 'deployment.kubernetes.io/desired-replicas';
export const MAX = 'deployment.kubernetes.io/max-replicas';
/** rand.SafeEncodeString's alphabet. */
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

const withoutHash = (template: any) => {
  const copy = structuredClone(template ?? {});
  if (copy.metadata?.labels) delete copy.metadata.labels[TEMPLATE_HASH];
  return copy;
};

/** controller.ComputeHash: a 32-bit FNV-1a of the template, its decimal digits encoded as SafeEncodeString does. */
export function templateHash(template: any): string {
  return [...String(fnv32a(canonical(withoutHash(template))))]
    .map((ch) => SAFE[ch.charCodeAt(0) % SAFE.length])
    .join('');
}

export const equalIgnoreHash = (a: any, b: any) => canonical(withoutHash(a)) === canonical(withoutHash(b));

/** GetScaledValueFromIntOrPercent. */
function scaled(value: unknown, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const percent = Number.parseInt(String(value ?? '0'), 10) || 0;
  const exact = (percent * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

export const replicasOf = (obj: any): number => obj?.spec?.replicas ?? 0;
export const rolling = (d: any) => d.spec?.strategy?.type !== 'Recreate';

/** ResolveFenceposts: [maxSurge, maxUnavailable] as counts. */
function fenceposts(d: any): [number, number] {
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  const surge = scaled(ru.maxSurge ?? '25%', replicasOf(d), true);
  const unavailable = scaled(ru.maxUnavailable ?? '25%', replicasOf(d), false);
  return surge === 0 && unavailable === 0 ? [0, 1] : [surge, unavailable];
}

export const maxSurge = (d: any) => (rolling(d) ? fenceposts(d)[0] : 0);
export const maxUnavailable = (d: any) =>
  !rolling(d) || replicasOf(d) === 0 ? 0 : Math.min(fenceposts(d)[1], replicasOf(d));

export const sum = (sets: any[], f: (rs: any) => number) => sets.reduce((n, rs) => n + f(rs), 0);
export const revisionOf = (rs: any) => Number(rs.metadata.annotations?.[REVISION] ?? 0) || 0;

export interface Condition {
  type: string;
  status: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** SetDeploymentCondition: nothing changes when status and reason are the same. */
export function setCondition(
  status: any,
  type: string,
  value: string,
  reason: string,
  message: string,
  now: number,
) {
  const conditions: Condition[] = status.conditions ?? [];
  const current = conditions.find((c) => c.type === type);
  if (current && current.status === value && current.reason === reason) return;
  const at = kubeTime(now);
  const condition = {
    type,
    status: value,
    lastUpdateTime: at,
    lastTransitionTime: current && current.status === value ? current.lastTransitionTime : at,
    reason,
    message,
  };
  status.conditions = [...conditions.filter((c) => c.type !== type), condition];
}

export const conditionOf = (status: any, type: string): Condition | undefined =>
  (status?.conditions ?? []).find((c: Condition) => c.type === type);

/** DeploymentComplete: every replica updated and available, this generation observed. */
export function complete(d: any, status: any): boolean {
  const want = replicasOf(d);
  return (
    (status.updatedReplicas ?? 0) === want &&
    (status.replicas ?? 0) === want &&
    (status.availableReplicas ?? 0) === want &&
    (status.observedGeneration ?? 0) >= (d.metadata.generation ?? 1)
  );
}

/**
 * calculateStatus + syncRolloutStatus: the status of `d` from its ReplicaSets; `conditions`: the ones it has
 * (with what this sync set); `estimateProgress`: false for a scaling-only sync (syncDeploymentStatus);
 * `due(at)`: whether the progress deadline at `at` has come (else wake then).
 */
export function rolloutStatus(
  d: any,
  sets: any[],
  conditions: Condition[] | undefined,
  estimateProgress: boolean,
  due: (at: number) => boolean,
  now: number,
): any {
  const newRS = sets.find((rs) => equalIgnoreHash(rs.spec?.template, d.spec?.template));
  const available = sum(sets, (rs) => rs.status?.availableReplicas ?? 0);
  const status: any = {
    observedGeneration: d.metadata.generation,
    replicas: sum(sets, (rs) => rs.status?.replicas ?? 0),
    updatedReplicas: newRS?.status?.replicas ?? 0,
    readyReplicas: sum(sets, (rs) => rs.status?.readyReplicas ?? 0),
    availableReplicas: available,
    unavailableReplicas: Math.max(0, sum(sets, replicasOf) - available),
    ...(conditions ? { conditions } : {}),
  };
  if (available >= replicasOf(d) - maxUnavailable(d))
    setCondition(
      status,
      'Available',
      'True',
      'MinimumReplicasAvailable',
      'Deployment has minimum availability.',
      now,
    );
  else
    setCondition(
      status,
      'Available',
      'False',
      'MinimumReplicasUnavailable',
      'Deployment does not have minimum availability.',
      now,
    );
  if (estimateProgress) progress(d, status, newRS, due, now);
  const failure = [newRS, ...sets.filter((rs) => rs !== newRS)]
    .map((rs) => conditionOf(rs?.status, 'ReplicaFailure'))
    .find((c) => c?.status === 'True') as any;
  if (failure) setCondition(status, 'ReplicaFailure', 'True', failure.reason, failure.message, now);
  else if (status.conditions)
    status.conditions = status.conditions.filter((c: Condition) => c.type !== 'ReplicaFailure');
  for (const key of [
    'replicas',
    'updatedReplicas',
    'readyReplicas',
    'availableReplicas',
    'unavailableReplicas',
  ])
    if (status[key] === 0) delete status[key];
  return status;
}

/** The Progressing condition: complete, progressing, or past progressDeadlineSeconds without progress. */
function progress(
  d: any,
  status: any,
  newRS: any | undefined,
  due: (at: number) => boolean,
  now: number,
): void {
  const deadline = d.spec?.progressDeadlineSeconds;
  if (deadline === undefined || deadline === 2147483647) {
    if (status.conditions)
      status.conditions = status.conditions.filter((c: Condition) => c.type !== 'Progressing');
    return;
  }
  const current = conditionOf(status, 'Progressing');
  if (
    (status.replicas ?? 0) === (status.updatedReplicas ?? 0) &&
    current?.reason === 'NewReplicaSetAvailable'
  )
    return;
  const name = newRS ? `ReplicaSet "${newRS.metadata.name}"` : `Deployment "${d.metadata.name}"`;
  const before = d.status ?? {};
  const oldOf = (x: any) => (x.replicas ?? 0) - (x.updatedReplicas ?? 0);
  if (complete(d, status))
    setCondition(
      status,
      'Progressing',
      'True',
      'NewReplicaSetAvailable',
      `${name} has successfully progressed.`,
      now,
    );
  else if (
    (status.updatedReplicas ?? 0) > (before.updatedReplicas ?? 0) ||
    oldOf(status) < oldOf(before) ||
    (status.readyReplicas ?? 0) > (before.readyReplicas ?? 0) ||
    (status.availableReplicas ?? 0) > (before.availableReplicas ?? 0)
  ) {
    const at = kubeTime(now);
    const condition = {
      type: 'Progressing',
      status: 'True',
      lastUpdateTime: at,
      lastTransitionTime: current?.status === 'True' ? current.lastTransitionTime : at,
      reason: 'ReplicaSetUpdated',
      message: `${name} is progressing.`,
    };
    status.conditions = [
      ...(status.conditions ?? []).filter((c: Condition) => c.type !== 'Progressing'),
      condition,
    ];
  } else if (current && current.reason !== 'NewReplicaSetAvailable') {
    const timedOut =
      current.reason === 'ProgressDeadlineExceeded' ||
      due(Date.parse(current.lastUpdateTime) + deadline * 1000 + 1);
    if (timedOut)
      setCondition(
        status,
        'Progressing',
        'False',
        'ProgressDeadlineExceeded',
        `${name} has timed out progressing.`,
        now,
      );
  }
}
