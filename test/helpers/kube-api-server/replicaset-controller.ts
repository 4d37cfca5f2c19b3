/**
 * The ReplicaSet controller (pkg/controller/replicaset), for apps/v1 ReplicaSets:
 * - keeps spec.replicas active pods (not Succeeded / Failed, not being deleted): creates `<rs>-xxxxx`
 *   from the template (its labels and annotations, an ownerReference kind ReplicaSet controller=true),
 *   so a pod deleted, evicted or failed from outside is replaced at once; a refused create is a
 *   FailedCreate Event, a `problem` and the condition ReplicaFailure, retried every 200 ms;
 * - removes the surplus in pod-ranking.ts's order, gracefully (the pods' own terminationGracePeriodSeconds);
 * - adopts orphan pods its selector matches and releases pods it no longer matches (ClaimPods);
 * - status: replicas (active pods), fullyLabeledReplicas, readyReplicas, availableReplicas (ready for
 *   minReadySeconds), observedGeneration.
 */
import { type Cluster, controllerOf, listIn } from './cluster.js';
import { isPodActive, isPodReady, podsToDelete, readyTime } from './pod-ranking.js';
import { selectorMatches } from './selectors.js';
import { kubeTime } from './store.js';

const SOURCE = { component: 'replicaset-controller' };
const RETRY_MS = 200;

export function ownerRef(obj: any): any {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    uid: obj.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Takes orphans the selector matches (not being deleted), lets go of owned objects it no longer matches;
 * returns what the owner controls now.
 */
export function claim(c: Cluster, owner: any, candidates: any[]): any[] {
  const uid = owner.metadata.uid;
  const mine: any[] = [];
  for (const seen of candidates) {
    const o = c.store.peek(seen.kind, seen.metadata.namespace, seen.metadata.name);
    if (!o) continue;
    const ref = controllerOf(o, owner.kind);
    // Another owner's move since the list (an orphan adopted): the next pass sees it.
    if (ref?.uid !== uid && o.metadata.resourceVersion !== seen.metadata.resourceVersion) continue;
    const anyController = (o.metadata.ownerReferences ?? []).find((r: any) => r.controller);
    const matches = selectorMatches(owner.spec?.selector, o.metadata.labels);
    if (ref?.uid === uid) {
      if (matches) mine.push(o);
      else {
        const refs = o.metadata.ownerReferences.filter((r: any) => r.uid !== uid);
        const next = { ...o, metadata: { ...o.metadata, ownerReferences: refs } };
        if (refs.length === 0) delete next.metadata.ownerReferences;
        c.write(() => c.store.replace(next, 'system'));
      }
    } else if (
      !anyController &&
      matches &&
      !o.metadata.deletionTimestamp &&
      !owner.metadata.deletionTimestamp
    ) {
      const next = {
        ...o,
        metadata: {
          ...o.metadata,
          ownerReferences: [...(o.metadata.ownerReferences ?? []), ownerRef(owner)],
        },
      };
      const adopted = c.write(() => c.store.replace(next, 'system'));
      if (adopted) mine.push(adopted);
    }
  }
  return mine;
}

export class ReplicaSetController {
  /** When a ReplicaSet whose pod create was refused tries again, by uid. */
  private readonly retryAt = new Map<string, number>();
  /** The last refusal of a ReplicaSet's pod create, by uid (its ReplicaFailure condition). */
  private readonly failure = new Map<string, string>();

  constructor(private readonly c: Cluster) {}

  pass(now: number): void {
    const sets = this.c.store.list('ReplicaSet');
    const live = new Set(sets.map((rs) => rs.metadata.uid));
    for (const uid of this.retryAt.keys()) if (!live.has(uid)) this.retryAt.delete(uid);
    for (const uid of this.failure.keys()) if (!live.has(uid)) this.failure.delete(uid);
    if (sets.length === 0) return;
    const podsByNamespace = new Map<string, any[]>();
    for (const p of this.c.store.peekAll('Pod')) listIn(podsByNamespace, p.metadata.namespace).push(p);
    for (const rs of sets) this.sync(rs, podsByNamespace.get(rs.metadata.namespace) ?? [], sets, now);
  }

  private sync(rs: any, podsInNamespace: any[], sets: any[], now: number): void {
    const uid = rs.metadata.uid;
    const candidates = podsInNamespace.filter((p) => {
      if (!isPodActive(p)) return false;
      const ref = controllerOf(p, 'ReplicaSet');
      return ref ? ref.uid === uid : !(p.metadata.ownerReferences ?? []).some((r: any) => r.controller);
    });
    let mine = claim(this.c, rs, candidates);
    if (!rs.metadata.deletionTimestamp) {
      const active = mine.filter(isPodActive);
      const want: number = rs.spec?.replicas ?? 1;
      if (active.length < want) this.create(rs, want - active.length, now);
      else if (active.length > want) {
        this.failure.delete(uid);
        const related = this.relatedPods(rs, podsInNamespace, sets);
        for (const pod of podsToDelete(active, related, active.length - want, now)) this.delete(rs, pod);
      } else this.failure.delete(uid);
      mine = this.c.store
        .peekAll('Pod', rs.metadata.namespace)
        .filter((p) => controllerOf(p, 'ReplicaSet')?.uid === uid);
    }
    this.writeStatus(rs, mine.filter(isPodActive), now);
  }

  /** The pods of every ReplicaSet with the same controller (getIndirectlyRelatedPods). */
  private relatedPods(rs: any, pods: any[], sets: any[]): any[] {
    const owner = controllerOf(rs, 'Deployment');
    const siblings = new Set(
      owner
        ? sets.filter((s) => controllerOf(s, 'Deployment')?.uid === owner.uid).map((s) => s.metadata.uid)
        : [rs.metadata.uid],
    );
    return pods.filter((p) => siblings.has(controllerOf(p, 'ReplicaSet')?.uid));
  }

  private create(rs: any, count: number, now: number): void {
    const uid = rs.metadata.uid;
    const retry = this.retryAt.get(uid);
    if (retry !== undefined && !this.c.due(retry, now)) return;
    this.retryAt.delete(uid);
    for (let i = 0; i < count; i++) {
      try {
        const pod = this.c.store.create(this.podFor(rs), 'system');
        this.failure.delete(uid);
        this.c.events.record(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${pod.metadata.name}`, SOURCE);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (message.includes('because it is being terminated')) return; // as the real one: nothing to do
        this.c.problem(message);
        this.c.events.record(rs, 'Warning', 'FailedCreate', `Error creating: ${message}`, SOURCE);
        this.failure.set(uid, message);
        this.retryAt.set(uid, now + RETRY_MS);
        this.c.due(now + RETRY_MS, now);
        return;
      }
    }
  }

  private delete(rs: any, pod: any): void {
    const { namespace, name } = pod.metadata;
    const done = this.c.write(() => this.c.store.delete('Pod', namespace, name));
    if (done) this.c.events.record(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${name}`, SOURCE);
  }

  private podFor(rs: any): any {
    const template = structuredClone(rs.spec?.template ?? {});
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${rs.metadata.name}-`,
        namespace: rs.metadata.namespace,
        ...(template.metadata?.labels ? { labels: template.metadata.labels } : {}),
        ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        ...(template.metadata?.finalizers ? { finalizers: template.metadata.finalizers } : {}),
        ownerReferences: [ownerRef(rs)],
      },
      spec: template.spec ?? {},
    };
  }

  private writeStatus(rs: any, active: any[], now: number): void {
    const templateLabels: Record<string, string> = rs.spec?.template?.metadata?.labels ?? {};
    const minReadyMs = (rs.spec?.minReadySeconds ?? 0) * 1000;
    let ready = 0;
    let available = 0;
    for (const pod of active) {
      if (!isPodReady(pod)) continue;
      ready++;
      const since = readyTime(pod);
      // IsPodAvailable: ready for longer than minReadySeconds (the Ready time has whole seconds).
      if (minReadyMs === 0 || (since > 0 && since + minReadyMs < now)) available++;
      else if (since > 0) this.c.due(since + minReadyMs + 1, now);
    }
    const status: any = {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) =>
        Object.entries(templateLabels).every(([k, v]) => p.metadata.labels?.[k] === v),
      ).length,
      readyReplicas: ready,
      availableReplicas: available,
      observedGeneration: rs.metadata.generation,
    };
    const failure = this.failure.get(rs.metadata.uid);
    const previous = (rs.status?.conditions ?? []).find((c: any) => c.type === 'ReplicaFailure');
    const conditions = (rs.status?.conditions ?? []).filter((c: any) => c.type !== 'ReplicaFailure');
    if (failure)
      conditions.push(
        previous ?? {
          type: 'ReplicaFailure',
          status: 'True',
          lastTransitionTime: kubeTime(now),
          reason: 'FailedCreate',
          message: failure,
        },
      );
    if (conditions.length) status.conditions = conditions;
    // omitempty, as the real status serializes (replicas is always there).
    for (const key of ['fullyLabeledReplicas', 'readyReplicas', 'availableReplicas'])
      if (status[key] === 0) delete status[key];
    if (JSON.stringify(status) !== JSON.stringify(rs.status ?? {}))
      this.c.write(() => this.c.store.replace({ ...rs, status }, 'system'));
  }
}
