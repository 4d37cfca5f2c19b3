/**
 * The admission plugins a pod create passes through on a real API server, in their order:
 * LimitRanger (container defaults from the namespace's LimitRanges, then their min/max),
 * Priority (spec.priority from spec.priorityClassName, or the globalDefault class, or 0; an unknown
 * class is refused), PodSecurity (the namespace's enforced level), ResourceQuota. Refusals are
 * 403 Forbidden, worded as the real plugins word them.
 */
import { enforcedLevel, podSecurityViolation } from './pod-security.js';
import { forbidden, typeByKind } from './resources.js';
import { parseQuantity, quotaExceeded } from './scheduling.js';

export interface AdmissionReader {
  get(kind: string, namespace: string | undefined, name: string): any | undefined;
  list(kind: string, namespace?: string): any[];
}

const terminal = (pod: any) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** LimitRanger's mutation: each container gets the `default` limits and `defaultRequest` requests it lacks. */
function limitRangerDefaults(pod: any, ranges: any[]): void {
  const items = ranges.flatMap((r) => (r.spec?.limits ?? []).filter((l: any) => l.type === 'Container'));
  if (!items.length) return;
  const notes: string[] = [];
  for (const list of ['initContainers', 'containers'])
    for (const c of pod.spec?.[list] ?? []) {
      const resources = (c.resources ??= {});
      const setLimits: string[] = [];
      const setRequests: string[] = [];
      for (const item of items) {
        for (const [r, v] of Object.entries<string>(item.default ?? {})) {
          resources.limits ??= {};
          if (resources.limits[r] === undefined) {
            resources.limits[r] = v;
            setLimits.push(r);
          }
        }
        for (const [r, v] of Object.entries<string>(item.defaultRequest ?? item.default ?? {})) {
          resources.requests ??= {};
          if (resources.requests[r] === undefined) {
            resources.requests[r] = v;
            setRequests.push(r);
          }
        }
      }
      if (setRequests.length) notes.push(`${setRequests.join(', ')} request for container ${c.name}`);
      if (setLimits.length) notes.push(`${setLimits.join(', ')} limit for container ${c.name}`);
    }
  if (notes.length) {
    const annotations = (pod.metadata.annotations ??= {});
    annotations['kubernetes.io/limit-ranger'] = `LimitRanger plugin set: ${notes.join('; ')}`;
  }
}

/** LimitRanger's validation of Container min/max. */
function limitRangerViolations(pod: any, ranges: any[]): string[] {
  const out: string[] = [];
  const items = ranges.flatMap((r) => (r.spec?.limits ?? []).filter((l: any) => l.type === 'Container'));
  for (const item of items)
    for (const c of pod.spec?.containers ?? []) {
      for (const [r, max] of Object.entries<string>(item.max ?? {})) {
        const limit = c.resources?.limits?.[r];
        if (limit === undefined)
          out.push(`maximum ${r} usage per Container is ${max}.  No limit is specified`);
        else if (parseQuantity(limit) > parseQuantity(max))
          out.push(`maximum ${r} usage per Container is ${max}, but limit is ${limit}`);
      }
      for (const [r, min] of Object.entries<string>(item.min ?? {})) {
        const request = c.resources?.requests?.[r];
        if (request === undefined)
          out.push(`minimum ${r} usage per Container is ${min}.  No request is specified`);
        else if (parseQuantity(request) < parseQuantity(min))
          out.push(`minimum ${r} usage per Container is ${min}, but request is ${request}`);
      }
    }
  return out;
}

/** The Priority plugin: priority and preemptionPolicy from the pod's class. Returns a refusal, or undefined. */
function priority(pod: any, reader: AdmissionReader): string | undefined {
  const spec = (pod.spec ??= {});
  let value = 0;
  let policy: string | undefined;
  if (!spec.priorityClassName) {
    const global = reader.list('PriorityClass').find((pc) => pc.globalDefault === true);
    if (global) {
      spec.priorityClassName = global.metadata.name;
      value = global.value;
      policy = global.preemptionPolicy;
    }
  } else {
    const pc = reader.get('PriorityClass', undefined, spec.priorityClassName);
    if (!pc) return `no PriorityClass with name ${spec.priorityClassName} was found`;
    value = pc.value;
    policy = pc.preemptionPolicy;
  }
  if (spec.priority !== undefined && spec.priority !== value)
    return `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`;
  spec.priority = value;
  spec.preemptionPolicy = policy ?? 'PreemptLowerPriority';
  return undefined;
}

/**
 * The mutating admission of a pod about to be created (LimitRanger defaults, Priority), or a 403.
 * `errorName`: how a refusal names it (its generateName when it has no name yet, as on a real server).
 */
export function mutatePod(pod: any, reader: AdmissionReader, errorName: string): void {
  limitRangerDefaults(pod, reader.list('LimitRange', pod.metadata.namespace));
  const why = priority(pod, reader);
  if (why) throw forbidden(typeByKind('Pod')!, errorName, why);
}

/** The validating admission of a valid pod about to be created (LimitRanger, PodSecurity, ResourceQuota). */
export function validatePod(pod: any, reader: AdmissionReader, errorName: string): void {
  const t = typeByKind('Pod')!;
  const namespace: string = pod.metadata.namespace;
  const limits = limitRangerViolations(pod, reader.list('LimitRange', namespace));
  if (limits.length)
    throw forbidden(t, errorName, limits.length === 1 ? limits[0]! : `[${limits.join(', ')}]`);
  const { level, version } = enforcedLevel(reader.get('Namespace', undefined, namespace));
  const violation = podSecurityViolation(pod, level, version);
  if (violation) throw forbidden(t, errorName, violation);
  const quotas = reader.list('ResourceQuota', namespace);
  if (quotas.length) {
    const pods = reader.list('Pod', namespace).filter((p) => !terminal(p));
    const exceeded = quotaExceeded(pod, quotas, pods);
    if (exceeded) throw forbidden(t, errorName, exceeded);
  }
}
